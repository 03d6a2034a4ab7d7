#!/usr/bin/env bash
# Session 31 call c (after b-run.sh in the same call): profiles for issue 15's unmet targets. Qwen3-0.6B prefill at
# 512 / 4096 tokens with the last chunk kernel by kernel; one-row decode (K = 16) after 128 and 4000 prompt
# positions with one step kernel by kernel, Qwen3-0.6B and Llama-3.2-1B.
set -uo pipefail
R=$OUT/run39c
. bench/h200_prologue.sh
for s in qwen3-0.6b llama-3.2-1b; do
  $B/ewgpu make-tiny /tmp/m --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made $s"
  if [ $s = qwen3-0.6b ]; then
    timeout 100 $B/ewgpu bench prefill /tmp/m --lengths 512,4096 --profile > $R/prefill-profile-$s.txt 2>&1
    el "$s prefill profile rc $?"
  fi
  for p in 128 4000; do
    timeout 100 $B/ewgpu bench decode /tmp/m --steps 16 --tokens 128 --prompt-tokens $p --profile \
      > $R/decode-profile-$s-$p.txt 2>&1
    el "$s decode profile after $p rc $?"
  done
  rm -rf /tmp/m
done
for f in $R/*profile*.txt; do echo "== $f"; grep -E "tok/s|^ +[0-9]+ +[0-9.]+ " $f | head -6; done
cat $L
