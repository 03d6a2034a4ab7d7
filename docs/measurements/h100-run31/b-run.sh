#!/usr/bin/env bash
# Prepared in session 22 for the early top-k list A/B (not yet run: no H200 could be started). Expects
# .h200/pack.tar.xz (build-h200 packed as in docs/benchmarks.md: stripped binaries, lib/, libwebgpu_wrapper.so)
# and .gl/. Top-k rows listed by phase 1 (early_k, SampleBatch::kSampledTopK: phases 1, 4, 5) against the
# five phases (EWGPU_SAMPLE_EARLY_TOPK=0), ABAB: decode K=16 greedy / T0.7 p0.8 k20 / T0.6 p0.95 k20 / k40 /
# T0.6 p0.95 on the three shapes; the sampler alone (ReportsDispatchCost) both ways; sample_test.
set -uo pipefail
R=/tmp/ra; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local name=$1 file=$2; shift 2; printf "%-40s" "$name" >> $R/$file; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file; }
timeout 150 $B/tests/kernels/sample_test > $R/sample_test.txt 2>&1; el "sample_test rc $?"
grep -E "PASSED|FAILED" $R/sample_test.txt >> $L
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2 3; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    dec "$shape greedy" decode.txt $M --steps 16 --tokens 256
    for e in 0 1 6; do
      if [ $e = 6 ]; then export EWGPU_SAMPLE_TOPK_PHASE6=1; else export EWGPU_SAMPLE_EARLY_TOPK=$e; fi
      dec "$shape k20 early$e" decode.txt $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      dec "$shape p0.95k20 early$e" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95 --top-k 20
      dec "$shape k40 early$e" decode.txt $M --steps 16 --tokens 256 --temperature 0.8 --top-k 40
      unset EWGPU_SAMPLE_EARLY_TOPK EWGPU_SAMPLE_TOPK_PHASE6
    done
    dec "$shape p0.95" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    EWGPU_SAMPLE_PHASE6_ALL=1 dec "$shape p0.95 phase6" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
  done
done
el decode
M=/tmp/m-llama-3.2-1b
for v in "greedy||" "k20-early0|EWGPU_SAMPLE_EARLY_TOPK=0|--temperature 0.7 --top-p 0.8 --top-k 20" "k20-early1||--temperature 0.7 --top-p 0.8 --top-k 20" "k20-phase6|EWGPU_SAMPLE_TOPK_PHASE6=1|--temperature 0.7 --top-p 0.8 --top-k 20" "p95||--temperature 0.6 --top-p 0.95"; do
  IFS='|' read -r name envs flags <<< "$v"
  env $envs timeout 60 $B/ewgpu bench decode $M --steps 16 --tokens 64 $flags --profile > $R/profile-$name.txt 2>&1
done
el profile
for rep in 1 2; do
  for e in 0 1 6; do
    echo "== early $e" >> $R/cost.txt
    EWGPU_SAMPLE_PHASE6_ALL=$([ $e = 6 ] && echo 1 || echo 0) EWGPU_SAMPLE_TOPK_PHASE6=$([ $e = 6 ] && echo 1 || echo 0) EWGPU_SAMPLE_EARLY_TOPK=$([ $e = 0 ] && echo 0 || echo 1) timeout 60 $B/tests/kernels/sample_test --gtest_filter=SampleKernel.ReportsDispatchCost 2>&1 | grep "\[ sample \]" >> $R/cost.txt
  done
done
el cost
timeout 200 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
grep -E "PASSED|FAILED" $R/batch_test.txt >> $L
tar czf $OUT/a.tgz -C $R .
