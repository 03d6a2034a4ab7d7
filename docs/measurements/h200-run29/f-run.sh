#!/usr/bin/env bash
# Session 20 call 6: the single-row GEMV's x̂ prologue a quarter group per thread (QSG) against a group per thread
# (EWGPU_QUANT_SG=0): bench decode greedy K = 16, ABAB per shape (0.6B, 1B, 2B), one profile each way (1B);
# gemv_test and forward_test on the H200.
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
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for rep in 1 2; do
    for v in old new; do
      E=EWGPU_X=1; [ $v = old ] && E="EWGPU_QUANT_SG=0"
      printf "%-28s" "$shape $v" >> $R/decode.txt
      env $E $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 256 2>&1 | grep -E "^ +16 " >> $R/decode.txt
    done
  done
  if [ $shape = llama-3.2-1b ]; then
    for v in old new; do
      E=EWGPU_X=1; [ $v = old ] && E="EWGPU_QUANT_SG=0"
      env $E $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 256 --profile > $R/profile-$v-$shape.txt 2>&1
    done
  fi
  el "$shape decode"
  rm -rf /tmp/m-$shape
done
for t in kernels/gemv_test runtime/forward_test; do
  n=$(basename $t)
  timeout 300 $B/tests/$t > $R/$n.txt 2>&1; el "$n rc $?"
  grep -E "PASSED|FAILED" $R/$n.txt >> $L
done
tar czf $OUT/f.tgz -C $R .
