#!/usr/bin/env bash
# Session 25: attention_combine.wgsl on 256 threads (ranges spread over lanes) against the serial merge
# (EWGPU_ATTN_COMBINE=serial), both with every range (EWGPU_ATTN_RANGE=0), and with fewer ranges early
# (EWGPU_ATTN_RANGE=128 / 64), ABAB rounds, greedy decode K=16 after 128 / 512 / 1024 / 4000 positions, 1B, 0.6B, 2B;
# profiles after 4000 positions; attention_test and forward_test at the defaults. Writes $OUT/g.tgz.
set -uo pipefail
R=/tmp/rg; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local f=$1 name=$2; shift 2; printf "%-52s" "$name" >> $R/$f; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$f || echo >> $R/$f; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
V="EWGPU_ATTN_COMBINE=serial EWGPU_ATTN_RANGE=0 EWGPU_ATTN_RANGE=128 EWGPU_ATTN_RANGE=64"
for rep in 1 2; do
  for shape in llama-3.2-1b qwen3-0.6b qwen3.5-2b; do
    dec merge.txt "$shape p=128" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens 128 --context 4608
    for p in 512 1024 4000; do
      for v in $V; do
        (export $v; dec merge.txt "$shape p=$p $v" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608)
      done
    done
  done
  el "round $rep"
done
for shape in llama-3.2-1b qwen3-0.6b qwen3.5-2b; do
  for v in EWGPU_ATTN_COMBINE=serial EWGPU_ATTN_RANGE=0; do
    env $v timeout 90 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 --profile > $R/profile-$shape-${v//[=,]/_}.txt 2>&1
  done
done
el profiles
timeout 200 $B/tests/kernels/attention_test > $R/attention_test.txt 2>&1; el "attention_test rc $?"
timeout 200 $B/tests/runtime/forward_test > $R/forward_test.txt 2>&1; el "forward_test rc $?"
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
tar czf $OUT/g.tgz -C $R .
cat $L
