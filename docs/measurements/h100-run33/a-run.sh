#!/usr/bin/env bash
# Session 25: (1) decode attention's range count at long context (EWGPU_ATTN_SPLIT sweep, ABAB rounds): does a
# count that fits the GPU's resident workgroups in one wave beat the default (~512 workgroups)? greedy decode K=16
# after 1024 and 4000 positions, 1B and 0.6B; the profile of one step at the default and the best; (2) sampled vs
# greedy decode at K=16 (the seed card's T 0.6 / top-p 0.95, and T 0.7 / top-p 0.8 / top-k 20), two rounds.
# Expects .h200/pack.tar.xz and .gl/; writes $OUT/e.tgz.
set -uo pipefail
R=/tmp/re; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $L
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local f=$1 name=$2; shift 2; printf "%-44s" "$name" >> $R/$f; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$f || echo >> $R/$f; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2; do
  for shape in llama-3.2-1b qwen3-0.6b; do
    S="8 12 16 20 24 32"; [ $shape = qwen3-0.6b ] && S="16 24 32 40 48 64"
    for p in 1024 4000; do
      for s in $S; do
        EWGPU_ATTN_SPLIT=$s dec split.txt "$shape p=$p split=$s" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608
      done
    done
    dec split.txt "$shape p=128 default" /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens 128 --context 4608
  done
  el "split round $rep"
done
for shape in llama-3.2-1b qwen3-0.6b; do
  for s in ${PROFILE_SPLITS:-12 16 24 32}; do
    EWGPU_ATTN_SPLIT=$s timeout 90 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 --profile > $R/profile-$shape-split$s.txt 2>&1
  done
done
el profiles
for rep in 1 2; do
  for shape in llama-3.2-1b qwen3-0.6b qwen3.5-2b; do
    M=/tmp/m-$shape
    dec sampled.txt "$shape greedy" $M --steps 16 --tokens 256
    dec sampled.txt "$shape t0.6 p0.95" $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    dec sampled.txt "$shape t0.7 p0.8 k20" $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
  done
  el "sampled round $rep"
done
tar czf $OUT/e.tgz -C $R .
cat $L
