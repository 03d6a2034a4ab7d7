#!/usr/bin/env bash
# Session 26 call a: the batched decode GEMM in workgroup-memory tiles (gemm_q8_wt.wgsl) against the K-sliced one
# (gemm_q8.wgsl, EWGPU_GEMMQ_KERNEL=slice). GemvBatchBench.ModelShapes per kernel and tile width (NW 16 / 32 / 64);
# gemv_test and batch_test at the defaults; bench concurrent at 1 / 16 / 32 streams, ABAB, 1B and 2B shapes, and
# the LM head on the tile kernel too (EWGPU_GEMMQ_MAXN), and x̂ read from global memory (EWGPU_GEMMW_XSM=0) with more
# K slices. Writes its outputs under $OUT/a as they come (a run cut short keeps what it had).
set -uo pipefail
R=$OUT/a; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
timeout 240 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for v in slice tile slice tile head64 g8; do
    E=EWGPU_X=1
    [ $v = slice ] && E=EWGPU_GEMMQ_KERNEL=slice
    [ $v = head64 ] && E="EWGPU_GEMMQ_MAXN=1000000000 EWGPU_GEMMW_NW=64"
    [ $v = g8 ] && E="EWGPU_GEMMW_XSM=0 EWGPU_GEMMW_NW=8 EWGPU_GEMMW_KS=16"
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 200 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  rm -rf /tmp/m-$shape
done
for v in EWGPU_GEMMQ_KERNEL=slice EWGPU_GEMMW_NW=16 EWGPU_GEMMW_NW=32 EWGPU_GEMMW_NW=64 EWGPU_GEMMW_NW=16,EWGPU_GEMMW_KS=4 \
         EWGPU_GEMMW_XSM=0 EWGPU_GEMMW_XSM=0,EWGPU_GEMMW_NW=8,EWGPU_GEMMW_KS=16 EWGPU_GEMMW_XSM=0,EWGPU_GEMMW_NW=4,EWGPU_GEMMW_KS=32; do
  echo "== $v" >> $R/bench.txt
  env $(echo $v | tr ',' ' ') EWGPU_GEMVB_BENCH=2 timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 |
    grep "bench \]" >> $R/bench.txt
  el "bench $v rc $?"
done
timeout 240 $B/tests/kernels/gemv_test > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
grep -hE "PASSED|FAILED" $R/*_test.txt >> $L
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f | head -40; done
cat $L
