#!/usr/bin/env bash
# Session 18 call 2: the GEMV prefetch by grid size, the one-range threshold, defaults against the old kernels at
# 128 / 1024 / 4000 positions, sampled against greedy.
set -uo pipefail
R=${OUT:-/tmp/out}; mkdir -p $R
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
$B/ewgpu probe > $L 2>&1
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
dec() {  # label file env... -- args...
  local label=$1 file=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  printf "%-44s" "$label" >> $R/$file
  env EWGPU_ADAPTER=gpu "${envs[@]}" $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file
}
OLD="EWGPU_ATTN_PVU=1 EWGPU_ATTN_SHORT=0 EWGPU_GEMV_PREFETCH_WG=0"
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  M=/tmp/m-$shape
  el "made $shape"
  for rep in 1 2; do
    for wg in 0 64 128 192 100000; do
      dec "$shape p=128 prefetch_wg=$wg" sweep.txt EWGPU_GEMV_PREFETCH_WG=$wg -- $M --steps 16 --tokens 128 --prompt-tokens 128 --context 4608
    done
  done
  el "sweep $shape"
  if [ $shape != qwen3.5-2b ]; then
    for rep in 1 2; do
      for sh in 0 400; do
        dec "$shape p=256 short=$sh" sweep.txt EWGPU_ATTN_SHORT=$sh -- $M --steps 16 --tokens 128 --prompt-tokens 256 --context 4608
      done
    done
  fi
  for p in 128 1024 4000; do
    for v in old new old new; do
      if [ $v = old ]; then dec "$shape p=$p old" positions.txt $OLD -- $M --steps 16 --tokens 128 --prompt-tokens $p --context 4608
      else dec "$shape p=$p new" positions.txt EWGPU_X=1 -- $M --steps 16 --tokens 128 --prompt-tokens $p --context 4608; fi
    done
  done
  el "positions $shape"
  for rep in 1 2; do
    dec "$shape greedy" sampled.txt EWGPU_X=1 -- $M --steps 16 --tokens 256
    dec "$shape t0.6 p0.95" sampled.txt EWGPU_X=1 -- $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
  done
  el "sampled $shape"
  $B/ewgpu bench decode $M --steps 16 --tokens 128 --prompt-tokens 128 --context 4608 --profile > $R/profile-$shape.txt 2>&1
  rm -rf $M
done
el done
ls $R
