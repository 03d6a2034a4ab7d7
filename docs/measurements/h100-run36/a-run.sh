#!/usr/bin/env bash
# Session 27 call a: the batched decode GEMM chosen per op by width (kGemmTileMinRows: gate/up on gemm_q8_wt at 64
# weight rows per tile, the rest on gemm_q8) against gemm_q8 everywhere (EWGPU_GEMMQ_TILE_ROWS=0, the previous
# default). gemv_test and batch_test (also with the bound at 256 rows, so a tiny model's ops mix the kernels);
# bench concurrent at 1 / 16 / 32 streams, ABAB, 1B and 2B shapes, then the bound at 8192 (the 2B's GDN in-projection
# joins), the wide tiles at 32 rows, and x̂ as one digit everywhere (EWGPU_GEMV_Q8=1: what the precision costs, not
# a candidate default); GemvBatchBench.ModelShapes at the defaults and at other K slice counts and tile widths.
set -uo pipefail
R=$OUT/a
. bench/h200_prologue.sh
timeout 120 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
EWGPU_GEMMQ_TILE_ROWS=256 timeout 120 $B/tests/runtime/batch_test > $R/batch_test-tile256.txt 2>&1; el "batch_test tile256 rc $?"
timeout 150 $B/tests/kernels/gemv_test > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for v in slice wide slice wide w8192 nw32 one; do
    E=EWGPU_X=1
    [ $v = slice ] && E=EWGPU_GEMMQ_TILE_ROWS=0
    [ $v = w8192 ] && E=EWGPU_GEMMQ_TILE_ROWS=8192
    [ $v = nw32 ] && E=EWGPU_GEMMW_NW=32
    [ $v = one ] && E=EWGPU_GEMV_Q8=1
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 100 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  rm -rf /tmp/m-$shape
done
for v in EWGPU_X=1 EWGPU_GEMMQ_KS=8 EWGPU_GEMMQ_KS=32 EWGPU_GEMMW_NW=32 EWGPU_X=2; do
  echo "== $v" >> $R/bench.txt
  env $v EWGPU_GEMVB_BENCH=2 timeout 100 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 |
    grep "bench \]" >> $R/bench.txt
  el "bench $v rc $?"
done
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f | head -60; done
cat $L
