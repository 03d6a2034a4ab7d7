#!/usr/bin/env bash
# What the GPU machine's adapter offers with Dawn's experimental features allowed (ewgpu probe, --json: shader-f16,
# subgroup matrices and their shapes) and the batched projections' GPU time on the 1B and 2B shapes
# (GemvBatchBench: gemv_batch and gemm_q8 at 1 / 8 / 16 / 32 rows). Session 23 ran it on an H100
# (docs/measurements/h100-run31). Expects .h200/pack.tar.xz and .gl/ as bench/h200_sample_topk_ab.sh does;
# writes under $OUT.
set -uo pipefail
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $O/log.txt; }
export EWGPU_EXPERIMENTAL=1
timeout 60 $B/ewgpu probe > $O/probe.txt 2>&1; el "probe rc $?"
timeout 60 $B/ewgpu probe --json > $O/probe.json 2>&1; el "probe json rc $?"
EWGPU_GEMVB_BENCH=2 timeout 240 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench*' > $O/bench.txt 2>&1
el "bench rc $?"
