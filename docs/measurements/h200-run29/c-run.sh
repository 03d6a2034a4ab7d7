#!/usr/bin/env bash
# Session 20 call 3 (experiment, not kept): gemm_q8_tile in 32-row tiles with K split over workgroups (slices, raw partial sums), 1B shapes at 32 rows, twice.
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
for m in 1 1; do
  echo "== EWGPU_GEMVB_BENCH=$m" >> $R/bench.txt
  EWGPU_GEMVB_BENCH=$m timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 \
    | grep -E "^\[ bench|FAIL|rror" >> $R/bench.txt
  el "bench $m rc $?"
done
tar czf $OUT/c.tgz -C $R .
