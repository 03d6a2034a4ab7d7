#!/usr/bin/env bash
# Session 20 call 2: the batched projections at 1 / 8 / 16 / 32 rows through gemv_batch, gemm_q8 and the int8 prefill
# GEMM (gemm_q8_tile) in 32- and 64-row tiles, the 1B shapes twice (ABAB against the clock drifting), then the 2B's;
# Gemm.Int8PathMatchesTheReference with the 32-row tiles.
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
for m in 1 1 2; do
  echo "== EWGPU_GEMVB_BENCH=$m" >> $R/bench.txt
  EWGPU_GEMVB_BENCH=$m timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 \
    | grep -E "^\[ bench|FAIL|rror" >> $R/bench.txt
  el "bench $m rc $?"
  sleep 5
done
timeout 120 $B/tests/kernels/gemm_test --gtest_filter='Gemm.Int8*' > $R/gemm_test.txt 2>&1
el "gemm_test rc $?"
nvidia-smi -q -d CLOCK,PERFORMANCE > $R/smi.txt 2>&1
tar czf $OUT/b.tgz -C $R .
