#!/usr/bin/env bash
# Session 20 call 5: gemv_quant.wgsl's subgroup path (SG) against the workgroup path (EWGPU_QUANT_SG=0): the
# quantizer's µs in GemvBatchBench (1B shapes), bench concurrent 1 / 16 / 32 streams ABAB (1B, 2B), bench prefill
# 512 / 4096 ABAB (1B); gemv_test, gemm_test, batch_test, forward_test on the H200.
set -uo pipefail
R=/tmp/r; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/build-h200/lib:${LD_LIBRARY_PATH:-}
export EWGPU_ADAPTER=gpu
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
for v in old new old new; do
  E=EWGPU_X=1; [ $v = old ] && E="EWGPU_QUANT_SG=0"
  echo "== $v ($E)" >> $R/bench.txt
  env $E EWGPU_GEMVB_BENCH=1 timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 \
    | grep -E "^\[ bench.*rows (1|32)|FAIL|rror" >> $R/bench.txt
done
el "bench"
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for v in old new old new; do
    E=EWGPU_X=1; [ $v = old ] && E="EWGPU_QUANT_SG=0"
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 200 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  if [ $shape = llama-3.2-1b ]; then
    for v in old new old new; do
      E=EWGPU_X=1; [ $v = old ] && E="EWGPU_QUANT_SG=0"
      echo "== $shape $v ($E)" >> $R/prefill-$shape.txt
      env $E timeout 200 $B/ewgpu bench prefill /tmp/m-$shape --lengths 512,4096 >> $R/prefill-$shape.txt 2>&1
      el "$shape prefill $v rc $?"
    done
  fi
  rm -rf /tmp/m-$shape
done
for t in kernels/gemv_test kernels/gemm_test runtime/batch_test runtime/forward_test; do
  n=$(basename $t)
  timeout 300 $B/tests/$t > $R/$n.txt 2>&1; el "$n rc $?"
  grep -E "PASSED|FAILED" $R/$n.txt >> $L
done
tar czf $OUT/e.tgz -C $R .
