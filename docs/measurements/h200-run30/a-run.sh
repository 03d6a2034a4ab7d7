#!/usr/bin/env bash
# Session 21 call a: Dawn's workgroup-memory zero-init (default) against disable_workgroup_init, ABAB, greedy and
# sampled decode; sampled profiles (top-p alone, top-k + top-p) of the 1B; tests with the toggle.
set -uo pipefail
R=/tmp/ra; mkdir -p $R
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
dec() { local name=$1 file=$2; shift 2; printf "%-40s" "$name" >> $R/$file; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    EWGPU_DAWN_TOGGLES= dec "$shape greedy init" decode.txt $M --steps 16 --tokens 256
    EWGPU_DAWN_TOGGLES=disable_workgroup_init dec "$shape greedy noinit" decode.txt $M --steps 16 --tokens 256
  done
  M=/tmp/m-llama-3.2-1b
  for tg in "" disable_workgroup_init; do
    EWGPU_DAWN_TOGGLES=$tg dec "1b k20 $tg" decode.txt $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
    EWGPU_DAWN_TOGGLES=$tg dec "1b p0.95 $tg" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
  done
  for lds in "" 0; do
    for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
      EWGPU_SAMPLE_LIST_LDS=$lds dec "$shape k20 lds$lds" decode.txt /tmp/m-$shape --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      EWGPU_SAMPLE_LIST_LDS=$lds dec "$shape p0.95 lds$lds" decode.txt /tmp/m-$shape --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    done
  done
  for wg in 1024 512; do
    EWGPU_SAMPLE_WG=$wg dec "1b greedy wg$wg" decode.txt $M --steps 16 --tokens 256
    EWGPU_SAMPLE_WG=$wg dec "1b k20 wg$wg" decode.txt $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
    EWGPU_SAMPLE_WG=$wg dec "1b p0.95 wg$wg" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
  done
done
el decode
M=/tmp/m-llama-3.2-1b
$B/ewgpu bench decode $M --steps 16 --tokens 64 --temperature 0.7 --top-p 0.8 --top-k 20 --profile > $R/profile-k20.txt 2>&1
$B/ewgpu bench decode $M --steps 16 --tokens 64 --temperature 0.6 --top-p 0.95 --profile > $R/profile-p95.txt 2>&1
EWGPU_SAMPLE_LIST_LDS=0 $B/ewgpu bench decode $M --steps 16 --tokens 64 --temperature 0.7 --top-p 0.8 --top-k 20 --profile > $R/profile-k20-lds0.txt 2>&1
EWGPU_SAMPLE_WG=512 $B/ewgpu bench decode $M --steps 16 --tokens 64 --temperature 0.7 --top-p 0.8 --top-k 20 --profile > $R/profile-k20-wg512.txt 2>&1
EWGPU_DAWN_TOGGLES=disable_workgroup_init $B/ewgpu bench decode $M --steps 16 --tokens 64 --profile > $R/profile-greedy-noinit.txt 2>&1
$B/ewgpu bench decode $M --steps 16 --tokens 64 --profile > $R/profile-greedy-init.txt 2>&1
el profiles
tar czf $OUT/a.tgz -C $R .
