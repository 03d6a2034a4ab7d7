#!/usr/bin/env bash
# Session 19 call 6: gemv.wgsl's int8 group dot written once (rows4GroupQ8 = rows4WordsQ8 over loadWords4, the
# PREFETCH path's pieces) against the build before (old/ewgpu), greedy decode ABAB; gemv_test on the H200.
set -uo pipefail
R=/tmp/r; mkdir -p $R
T0=$(date +%s)
tar xJf .h200/pack.tar.xz
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/build-h200/lib:${LD_LIBRARY_PATH:-}
export EWGPU_ADAPTER=gpu EWGPU_SOURCE_DIR=$PWD
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
L=$R/log.txt
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
timeout 200 $B/tests/kernels/gemv_test > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  for rep in 1 2; do
    for v in old new; do
      X=$B/ewgpu; [ $v = old ] && X=$B/old/ewgpu
      printf "%-28s" "$shape $v" >> $R/decode.txt
      $X bench decode /tmp/m-$shape --steps 16 --tokens 256 2>&1 | grep -E "^ +16 " >> $R/decode.txt
    done
  done
  el "$shape"
  rm -rf /tmp/m-$shape
done
tar czf $OUT/f.tgz -C $R .
