#!/usr/bin/env bash
# Session 23: phase 4's short list for top-k rows (sample.wgsl short_top_k / short_top_p) against the radix selects
# over the whole candidate list (EWGPU_SAMPLE_SHORT_TOPK=0), ABAB in one run: decode K=16 greedy / T0.7 p0.8 k20 /
# T0.6 p0.95 k20 / T0.8 k40, and T0.6 p0.95 (no top-k: unchanged, a control) on the three shapes; the profile of
# one 1B step both ways; sample_test. Expects .h200/pack.tar.xz and .gl/ (docs/benchmarks.md); writes $OUT/a.tgz.
set -uo pipefail
R=/tmp/rs; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local name=$1; shift; printf "%-32s" "$name" >> $R/decode.txt; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/decode.txt; }
timeout 150 $B/tests/kernels/sample_test > $R/sample_test.txt 2>&1; el "sample_test rc $?"
grep -E "PASSED|FAILED" $R/sample_test.txt >> $L
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2 3; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    dec "$shape greedy" $M --steps 16 --tokens 256
    for s in 0 1; do
      export EWGPU_SAMPLE_SHORT_TOPK=$s
      dec "$shape k20p0.8 short$s" $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      dec "$shape k20p0.95 short$s" $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95 --top-k 20
      dec "$shape k40 short$s" $M --steps 16 --tokens 256 --temperature 0.8 --top-k 40
      unset EWGPU_SAMPLE_SHORT_TOPK
    done
    dec "$shape p0.95" $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
  done
done
el decode
M=/tmp/m-llama-3.2-1b
for s in 0 1; do
  EWGPU_SAMPLE_SHORT_TOPK=$s timeout 60 $B/ewgpu bench decode $M --steps 16 --tokens 64 --temperature 0.6 --top-p 0.95 --top-k 20 --profile > $R/profile-short$s.txt 2>&1
done
timeout 60 $B/ewgpu bench decode $M --steps 16 --tokens 64 --profile > $R/profile-greedy.txt 2>&1
el profile
tar czf $OUT/a.tgz -C $R .
