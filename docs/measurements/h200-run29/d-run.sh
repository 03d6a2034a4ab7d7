#!/usr/bin/env bash
# Session 20 call 4: the LM head on gemv_batch in engines of 32 rows (kGemmMaxRows) against gemm_q8 (the old rule,
# EWGPU_GEMMQ_MAXN=1000000000): bench concurrent at 1 / 16 / 32 streams, ABAB, 1B and 2B shapes; gemv_test and
# batch_test on the H200.
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
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for v in old new old new; do
    E=EWGPU_X=1; [ $v = old ] && E="EWGPU_GEMMQ_MAXN=1000000000"
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 200 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  rm -rf /tmp/m-$shape
done
timeout 200 $B/tests/kernels/gemv_test > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
timeout 200 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
tail -3 $R/gemv_test.txt $R/batch_test.txt >> $L
tar czf $OUT/d.tgz -C $R .
