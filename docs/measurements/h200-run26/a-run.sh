#!/usr/bin/env bash
# Call a (as run; its load part failed, see README): upload methods, load A/B, decode attention split at 128 / 4000.
set -uo pipefail
R=${OUT:-/tmp/out}; mkdir -p $R
tar xJf .h200/pack.tar.xz
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/build-h200/lib:${LD_LIBRARY_PATH:-}
export EWGPU_ADAPTER=gpu
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
$B/ewgpu probe > $R/probe.txt 2>&1
for t in 8 16; do $B/ewgpu bench gpu --upload 1073741824 --threads $t 2>&1 | tee -a $R/upload.txt; done
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  tok=$TOK
  case $shape in qwen3-0.6b) tok=.h200/qwen3-tokenizer.json;; llama-3.2-1b) tok=.h200/llama3-tokenizer.json;; esac
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $tok > /dev/null || continue
  # (the load A/B loop of b-run.sh was here; every ewgpu run crashed: a stale object in that build)
  if [ "$shape" != qwen3.5-2b ]; then
    for p in 128 4000; do
      for v in default EWGPU_ATTN_SPLIT=64 default EWGPU_ATTN_SPLIT=64 EWGPU_ATTN_SPLIT=32 EWGPU_ATTN_SPLIT=16; do
        echo "== $shape prompt $p $v" | tee -a $R/decode-long-$shape.txt
        env $( [ "$v" = default ] || echo "$v") $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 256 \
          --prompt-tokens $p --context 4608 2>&1 | grep -E "^ +16 " | tee -a $R/decode-long-$shape.txt
      done
    done
    $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 --profile > $R/profile-4000-$shape.txt
    $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 128 --context 4608 --profile > $R/profile-128-$shape.txt
  fi
  rm -rf /tmp/m-$shape
done
