#!/usr/bin/env bash
# Session 31 call a: two changes to gemm_q8 that keep every row's bits, against the kernel as it is, ABAB, in 32-row
# engines (bench concurrent, 1 / 16 / 32 streams), Llama-3.2-1B and Qwen3.5-2B shapes:
#  xsplit  EWGPU_GEMMQ_XSPLIT=1: x̂ in gemv_quant.wgsl's XSPLIT layout (a group's two 16-byte halves apart, so the
#          16 K-slice threads of a warp read 256 contiguous bytes per load instead of 512 bytes half used);
#  wg128   EWGPU_GEMMQ_WG=128: the tiles of 4 / 8 / 16 activation rows take 8 / 4 / 2 weight blocks, so their
#          workgroups have 128 threads as the 32-row tile's do (16 / 32 / 64 now);
#  both.
# The bit-identity tests on the GPU, and batch_test (every architecture at every row count) with both.
set -uo pipefail
R=$OUT/run39a
. bench/h200_prologue.sh
timeout 60 $B/tests/kernels/gemv_test --gtest_filter='GemvBatch.XSplitLayoutKeepsTheBits:GemvBatch.GemmTilesKeepTheBits:GemvBatch.SmallMGemm' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
EWGPU_GEMMQ_XSPLIT=1 EWGPU_GEMMQ_WG=128 EWGPU_BATCH_TEST_FULL=1 timeout 120 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
for s in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made $s"
  for r in 1 2; do
    for v in off xsplit wg128 both; do
      E=EWGPU_GEMMQ_XSPLIT=0
      [ $v = xsplit ] && E=EWGPU_GEMMQ_XSPLIT=1
      [ $v = wg128 ] && E=EWGPU_GEMMQ_WG=128
      [ $v = both ] && E="EWGPU_GEMMQ_XSPLIT=1 EWGPU_GEMMQ_WG=128"
      echo "== $s $v ($E)" >> $R/concurrent-$s.txt
      env $E timeout 100 $B/ewgpu bench concurrent /tmp/m --streams 1,16,32 --tokens 128 --fp32-tflops 65.4 \
        --int8-tops 120 >> $R/concurrent-$s.txt 2>&1
      el "$s $v rc $?"
    done
  done
  rm -rf /tmp/m
done
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f; done
cat $L
