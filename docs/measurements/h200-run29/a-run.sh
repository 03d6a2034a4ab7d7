#!/usr/bin/env bash
# Session 20 call 1: the batched projections kernel by kernel (gemv_test GemvBatchBench: the 1B and 2B shapes at 1 /
# 8 / 16 / 32 active rows, gemv_batch and gemm_q8) under gemm_q8's new variants: 8 activation rows per thread (MT),
# the next group's weights loaded ahead (PF), the mantissa-trick conversion (CVT), and K slice counts; then
# SmallMGemm (correctness) with the variants on.
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
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
for v in "EWGPU_X=1" "EWGPU_GEMMQ_CVT=1" "EWGPU_GEMMQ_PF=1" "EWGPU_GEMMQ_MT=8" "EWGPU_GEMMQ_MT=8 EWGPU_GEMMQ_PF=1 EWGPU_GEMMQ_CVT=1" \
         "EWGPU_GEMMQ_MT=8 EWGPU_GEMMQ_PF=1 EWGPU_GEMMQ_CVT=1 EWGPU_GEMMQ_KS=8" \
         "EWGPU_GEMMQ_MT=8 EWGPU_GEMMQ_PF=1 EWGPU_GEMMQ_CVT=1 EWGPU_GEMMQ_KS=32" "EWGPU_X=1"; do
  echo "== $v" >> $R/bench.txt
  env $v EWGPU_GEMVB_BENCH=2 timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 \
    | grep -E "^\[ bench|FAIL|rror" >> $R/bench.txt
  el "bench $v rc $?"
done
EWGPU_GEMMQ_MT=8 EWGPU_GEMMQ_PF=1 EWGPU_GEMMQ_CVT=1 timeout 120 $B/tests/kernels/gemv_test \
  --gtest_filter='GemvBatch.*' > $R/gemv_test-variants.txt 2>&1
el "gemv_test variants rc $?"
tar czf $OUT/a.tgz -C $R .
