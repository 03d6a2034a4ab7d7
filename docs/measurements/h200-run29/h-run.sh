#!/usr/bin/env bash
# Session 20 call 8: after moving the quarter-group quantization into one snippet (q8_quarter.wgsl) for gemv.wgsl
# and gemv_quant.wgsl: gemv_test, forward_test, batch_test on the H200; bench decode (1B) and bench concurrent (1B)
# once, against call f / e.
set -uo pipefail
R=/tmp/r8; mkdir -p $R
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
$B/ewgpu make-tiny /tmp/m1 --shape llama-3.2-1b --quant q4f16_1 --tokenizer $TOK > /dev/null
for rep in 1 2; do $B/ewgpu bench decode /tmp/m1 --steps 16 --tokens 256 2>&1 | grep -E "^ +16 " >> $R/decode.txt; done
timeout 200 $B/ewgpu bench concurrent /tmp/m1 --streams 1,16,32 --tokens 128 --fp32-tflops 65.4 --int8-tops 120 \
  > $R/concurrent-llama-3.2-1b.txt 2>&1
el "benches"
for t in kernels/gemv_test runtime/forward_test runtime/batch_test; do
  n=$(basename $t)
  timeout 300 $B/tests/$t > $R/$n.txt 2>&1; el "$n rc $?"
  grep -E "PASSED|FAILED" $R/$n.txt >> $L
done
tar czf $OUT/h.tgz -C $R .
