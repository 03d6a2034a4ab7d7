#!/usr/bin/env bash
# Session 24: attention.wgsl's latency measures (STAGE bits: 1 staged page ids, 2 V rows loaded with K, 4 unrolled
# scoring rounds) against the kernel before them (EWGPU_ATTN_STAGE=0), ABAB in one run: greedy decode K=16 after
# 128 / 1024 / 4000 positions (0.6B, 1B; 2B at 128 / 4000), the profile of one step after 4000 positions with 0 and
# 7, attention_test and forward_test at the defaults. Expects .h200/pack.tar.xz and .gl/ (docs/benchmarks.md);
# writes $OUT/a.tgz.
set -uo pipefail
R=/tmp/ra; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local name=$1; shift; printf "%-52s" "$name" >> $R/positions.txt; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/positions.txt; }
# VARIANTS: space-separated sets of comma-separated environment assignments (EWGPU_ATTN_STAGE, EWGPU_ATTN_PVU).
VARIANTS=${VARIANTS:-"EWGPU_ATTN_STAGE=0 EWGPU_ATTN_STAGE=1 EWGPU_ATTN_STAGE=3 EWGPU_ATTN_STAGE=7"}
PROFILE_VARIANTS=${PROFILE_VARIANTS:-"EWGPU_ATTN_STAGE=0 EWGPU_ATTN_STAGE=7"}
SHAPES=${SHAPES:-"qwen3-0.6b llama-3.2-1b qwen3.5-2b"}
for shape in $SHAPES; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2; do
  for shape in $SHAPES; do
    P="128 1024 4000"; [ $shape = qwen3.5-2b ] && P="128 4000"
    for p in $P; do
      for v in $VARIANTS; do
        (export ${v//,/ }; dec "$shape p=$p $v" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608)
      done
    done
  done
  el "round $rep"
done
for shape in ${PROFILE_SHAPES:-qwen3-0.6b llama-3.2-1b}; do
  for v in $PROFILE_VARIANTS; do
    env ${v//,/ } timeout 90 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 --profile > $R/profile-$shape-${v//[=,]/_}.txt 2>&1
  done
done
el profiles
[ "${TESTS:-1}" = 1 ] && timeout 200 $B/tests/kernels/attention_test > $R/attention_test.txt 2>&1; el "attention_test rc $?"
[ "${TESTS:-1}" = 1 ] && timeout 200 $B/tests/runtime/forward_test > $R/forward_test.txt 2>&1; el "forward_test rc $?"
grep -E "PASSED|FAILED" $R/*_test.txt >> $L
tar czf $OUT/a.tgz -C $R .
