#!/usr/bin/env bash
# Session 31 call b: gemm_q8's K slices by matrix size in 32-row engines (the defaults of call a now on): 32 slices
# for the matrices of fewer than 1024 blocks of 4 weight rows (the 1B's q|k|v, o and down: 512-768 workgroups, a
# quarter of the GPU's resident threads), 8 for the others (gate/up: 4096 workgroups, 4 groups a thread at 16
# slices), both, and the LM head on gemm_q8 (EWGPU_GEMMQ_MAXN) instead of gemv_batch now that x̂ loads are contiguous.
# bench concurrent 1 / 16 / 32 streams, two rounds for Llama-3.2-1B, one for Qwen3.5-2B (device time); then the bit tests.
set -uo pipefail
R=$OUT/run39b
. bench/h200_prologue.sh
for s in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made $s"
  rounds="1 2"; [ $s = qwen3.5-2b ] && rounds=1
  for r in $rounds; do
    for v in base small32 big8 both lmgemm; do
      E=EWGPU_X=1
      [ $v = small32 ] && E=EWGPU_GEMMQ_KS_SMALL=32
      [ $v = big8 ] && E=EWGPU_GEMMQ_KS_BIG=8
      [ $v = both ] && E="EWGPU_GEMMQ_KS_SMALL=32 EWGPU_GEMMQ_KS_BIG=8"
      [ $v = lmgemm ] && E=EWGPU_GEMMQ_MAXN=1000000
      echo "== $s $v ($E)" >> $R/concurrent-$s.txt
      env $E timeout 100 $B/ewgpu bench concurrent /tmp/m --streams 1,16,32 --tokens 128 --fp32-tflops 65.4 \
        --int8-tops 120 >> $R/concurrent-$s.txt 2>&1
      el "$s $v rc $?"
    done
  done
  rm -rf /tmp/m
done
timeout 90 $B/tests/kernels/gemv_test --gtest_filter='GemvBatch.GemmTilesKeepTheBits:GemvBatch.GemmWorkgroupsAndLayout:GemvBatch.XSplitLayoutKeepsTheBits' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f; done
cat $L
