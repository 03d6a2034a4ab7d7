#!/usr/bin/env bash
# Session 19 call 5: sampled streams (T 0.6, top-p 0.95) in the 32-row engine with the split sampler at every row
# count (EWGPU_SAMPLE_SPLIT_ROWS=64) and never (=0): where the five phases stop paying, as the greedy split did.
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
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for rep in 1 2; do
    for v in 64 0; do
      echo "== $shape EWGPU_SAMPLE_SPLIT_ROWS=$v" >> $R/sampled-$shape.txt
      EWGPU_SAMPLE_SPLIT_ROWS=$v timeout 200 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,2,4,8,16,32 \
        --tokens 128 --temperature 0.6 --top-p 0.95 >> $R/sampled-$shape.txt 2>&1
      el "$shape $v rc $?"
    done
  done
  rm -rf /tmp/m-$shape
done
tar czf $OUT/e.tgz -C $R .
