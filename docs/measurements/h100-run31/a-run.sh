#!/usr/bin/env bash
# Subgroup matrices (tensor cores) on the GPU machine, session 23: what the adapter offers with Dawn's unsafe APIs
# allowed (ewgpu probe), gemm_sgm.wgsl against the reference (SubgroupMatrix.GemmF16MatchesReference), and its GPU
# time beside gemv_batch / gemm_q8 on the 1B and 2B projection shapes, column groups 1 / 2 / 4 (GemvBatchBench).
# Expects .h200/pack.tar.xz and .gl/ as bench/h200_sample_topk_ab.sh does; writes under $OUT.
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
timeout 200 $B/tests/kernels/gemv_test --gtest_filter='SubgroupMatrix*' > $O/sgm_test.txt 2>&1; el "sgm test rc $?"
EWGPU_GEMVB_BENCH=2 timeout 240 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench*' > $O/bench.txt 2>&1
el "bench rc $?"
