#!/usr/bin/env bash
# Session 25: decode attention with fewer ranges early (Forward::attnRanges: one range per EWGPU_ATTN_RANGE
# positions, 2..attnSplit; 0 = the full split always, as before), ABAB rounds, greedy decode K=16 after 512 / 1024 /
# 2048 / 4000 positions, 1B, 0.6B, 2B; then attention_test and forward_test at the defaults. Writes $OUT/f.tgz.
set -uo pipefail
R=/tmp/rf; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local f=$1 name=$2; shift 2; printf "%-44s" "$name" >> $R/$f; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$f || echo >> $R/$f; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2; do
  for shape in llama-3.2-1b qwen3-0.6b qwen3.5-2b; do
    dec ranges.txt "$shape p=128" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens 128 --context 4608
    for p in 512 1024 2048 4000; do
      for r in 0 64 128 256; do
        EWGPU_ATTN_RANGE=$r dec ranges.txt "$shape p=$p range=$r" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608
      done
    done
  done
  el "round $rep"
done
timeout 200 $B/tests/kernels/attention_test > $R/attention_test.txt 2>&1; el "attention_test rc $?"
timeout 200 $B/tests/runtime/forward_test > $R/forward_test.txt 2>&1; el "forward_test rc $?"
EWGPU_ATTN_RANGE=16 timeout 200 $B/tests/runtime/forward_test --gtest_filter='AllArchitectures/*' > $R/forward_test_range16.txt 2>&1; el "forward_test range 16 rc $?"
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
tar czf $OUT/f.tgz -C $R .
cat $L
