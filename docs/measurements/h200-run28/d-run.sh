#!/usr/bin/env bash
# Session 19 call 4: where a greedy batch's two-dispatch argmax stops paying (call 3: it cost more at 16 and 32
# rows): the engine's decode step by kernel family at 1 / 2 / 4 / 8 / 16 streams with the argmax always split
# (EWGPU_SAMPLE_ARGMAX_ROWS=64) and never (=0), the sampler's reductions by subgroup shuffles in both; then the
# chosen default (at most 4 rows split) against the old sampler at 1 / 16 / 32 streams; bench decode greedy ABAB.
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
OLD="EWGPU_SAMPLE_ARGMAX_ROWS=0 EWGPU_SAMPLE_SG=0"
for shape in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  M=/tmp/m-$shape
  el "made $shape"
  for v in 64 0; do
    echo "== $shape EWGPU_SAMPLE_ARGMAX_ROWS=$v" >> $R/crossover-$shape.txt
    EWGPU_SAMPLE_ARGMAX_ROWS=$v timeout 150 $B/ewgpu bench concurrent $M --streams 1,2,4,8,16 --tokens 64 \
      >> $R/crossover-$shape.txt 2>&1
    el "$shape crossover $v rc $?"
  done
  for v in old new; do
    E=EWGPU_X=1; [ $v = old ] && E=$OLD
    echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
    env $E timeout 200 $B/ewgpu bench concurrent $M --streams 1,16,32 --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
    el "$shape $v rc $?"
  done
  for rep in 1 2; do
    for v in old new; do
      E=EWGPU_X=1; [ $v = old ] && E=$OLD
      printf "%-34s" "$shape $v greedy" >> $R/decode.txt
      env $E $B/ewgpu bench decode $M --steps 16 --tokens 256 2>&1 | grep -E "^ +16 " >> $R/decode.txt
    done
  done
  el "$shape decode"
  rm -rf $M
done
tar czf $OUT/d.tgz -C $R .
