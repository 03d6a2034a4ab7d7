#!/usr/bin/env bash
# Session 29 call a: are batch-1 decode's projections bound by their weights' trip from DRAM? The same shapes with
# every layer's projections reading the first layer's weights (EWGPU_X_SAME_LAYER=1, an uncommitted timing-only
# patch: ~12-40 MB of layer weights then stay in the 50 MB L2) against the real chain, ABAB, K = 16; then
# GemvBatchBench with the weights read from memory (its first GPU run).
set -uo pipefail
R=$OUT/a
. bench/h200_prologue.sh
for s in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made $s"
  for v in base same base same; do
    E=EWGPU_X=1
    [ $v = same ] && E=EWGPU_X_SAME_LAYER=1
    echo "== $s $v ($E)" >> $R/decode.txt
    env $E timeout 100 $B/ewgpu bench decode /tmp/m --steps 16 --tokens 256 >> $R/decode.txt 2>&1
    el "$s $v rc $?"
  done
  rm -rf /tmp/m
done
EWGPU_GEMVB_BENCH=1 timeout 150 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' > $R/gemvb-bench.txt 2>&1
el "gemvb rc $?"
