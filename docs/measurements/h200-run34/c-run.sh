#!/usr/bin/env bash
# Session 25, the merge as committed: attention_test and forward_test, then greedy decode K=16 after 128 / 1024 /
# 4000 positions (two rounds) and one profile after 4000 positions, 1B / 0.6B / 2B. Writes $OUT/h.tgz.
set -uo pipefail
R=/tmp/rh; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local f=$1 name=$2; shift 2; printf "%-40s" "$name" >> $R/$f; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$f || echo >> $R/$f; }
timeout 200 $B/tests/kernels/attention_test > $R/attention_test.txt 2>&1; el "attention_test rc $?"
timeout 200 $B/tests/runtime/forward_test > $R/forward_test.txt 2>&1; el "forward_test rc $?"
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
for rep in 1 2; do
  for shape in llama-3.2-1b qwen3-0.6b qwen3.5-2b; do
    for p in 128 1024 4000; do
      dec positions.txt "$shape p=$p" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608
    done
  done
  el "round $rep"
done
for shape in llama-3.2-1b qwen3-0.6b; do
  timeout 90 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 --profile > $R/profile-$shape.txt 2>&1
done
el profiles
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
tar czf $OUT/h.tgz -C $R .
cat $L
