#!/usr/bin/env bash
# Session 28 call a: gemm_q8 with several weight blocks per thread (NT: each x̂ load serves 4·NT weight rows, so a
# matrix's x̂ traffic falls NT-fold) and per workgroup (NB), against one block (the default). gemv_test (the new
# GemvBatch.GemmBlocksKeepTheBits included) and batch_test with NT 4; GemvBatchBench.ModelShapes with the variants in
# one process (1B and 2B shapes, then the 1B's again); bench concurrent ABAB with EWGPU_GEMMQ_NT=2 / 4, and NT 4 with
# the LM head on gemm_q8 too (EWGPU_GEMMQ_MAXN), and NT by tile (1 / 1 / 2 / 4 for tiles of 4 / 8 / 16 / 32
# rows), 1B and 2B shapes.
set -uo pipefail
R=$OUT/a
. bench/h200_prologue.sh
timeout 150 $B/tests/kernels/gemv_test --gtest_filter='GemvBatch.*' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
EWGPU_GEMMQ_NT=4 timeout 120 $B/tests/runtime/batch_test > $R/batch_test-nt4.txt 2>&1; el "batch_test nt4 rc $?"
EWGPU_GEMVB_BENCH=2 timeout 200 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 | grep "bench \]" > $R/bench.txt
el "bench 2 rc $?"
echo "== second pass" >> $R/bench.txt
EWGPU_GEMVB_BENCH=1 timeout 100 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 | grep "bench \]" >> $R/bench.txt
el "bench 1 rc $?"
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  vs="base nt2 nt4 lm4 mix base nt2 nt4 lm4 mix"
  [ $shape = qwen3.5-2b ] && vs="base nt2 nt4 mix base nt2 nt4 mix"
  for v in $vs; do
    E=EWGPU_X=1
    [ $v = nt2 ] && E=EWGPU_GEMMQ_NT=2
    [ $v = nt4 ] && E=EWGPU_GEMMQ_NT=4
    [ $v = lm4 ] && E="EWGPU_GEMMQ_NT=4 EWGPU_GEMMQ_MAXN=300000"
    [ $v = mix ] && E=EWGPU_GEMMQ_NT=1,1,2,4
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 100 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  rm -rf /tmp/m-$shape
done
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f | head -80; done
grep -E "rows 32" $R/bench.txt | head -200
cat $L
