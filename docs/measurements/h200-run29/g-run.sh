#!/usr/bin/env bash
# Session 20 call 7: with the quarter-group x̂ prologue (committed default), greedy against sampled (T 0.6 / top-p
# 0.95 and T 0.7 / top-p 0.8 / top-k 20), ABAB per shape, and greedy after 128 / 1024 / 4000 positions (0.6B, 1B).
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
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() { local name=$1 file=$2; shift 2; printf "%-34s" "$name" >> $R/$file; $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  M=/tmp/m-$shape
  el "made $shape"
  for rep in 1 2; do
    dec "$shape greedy" sampled.txt $M --steps 16 --tokens 256
    dec "$shape t0.6 p0.95" sampled.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    dec "$shape t0.7 p0.8 k20" sampled.txt $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
  done
  el "sampled $shape"
  if [ $shape != qwen3.5-2b ]; then
    for rep in 1 2; do
      for p in 128 1024 4000; do
        dec "$shape p=$p" positions.txt $M --steps 16 --tokens 128 --prompt-tokens $p --context 4608
      done
    done
    el "positions $shape"
  fi
  rm -rf $M
done
tar czf $OUT/g.tgz -C $R .
