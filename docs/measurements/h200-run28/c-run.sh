#!/usr/bin/env bash
# Session 19 call 3: the 32-row engine with the new sampler (greedy batches: phases 1 and 4; reductions by subgroup
# shuffles) against the old (one dispatch, workgroup memory), Llama-3.2-1B and Qwen3.5-2B, 1 / 16 / 32 streams.
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
  for v in old new; do
    E=EWGPU_X=1; [ $v = old ] && E="EWGPU_SAMPLE_ARGMAX=whole EWGPU_SAMPLE_SG=0"
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 200 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  rm -rf /tmp/m-$shape
done
tar czf $OUT/c.tgz -C $R .
