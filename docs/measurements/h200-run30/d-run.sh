#!/usr/bin/env bash
# Session 21 call d: phase 1's chunk top-k bound in two radix passes (new) against four (old-ewgpu = commit 1157c6b),
# ABAB: decode K=16 greedy / T0.7 p0.8 k20 / T0.6 p0.95 on the three shapes; sample_test.
set -uo pipefail
R=/tmp/rd; mkdir -p $R
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
dec() { local name=$1 file=$2 bin=$3; shift 3; printf "%-40s" "$name" >> $R/$file; timeout 60 $B/$bin bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2 3; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    for bin in old-ewgpu ewgpu; do
      dec "$shape greedy $bin" decode.txt $bin $M --steps 16 --tokens 256
      dec "$shape k20 $bin" decode.txt $bin $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      dec "$shape p0.95 $bin" decode.txt $bin $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    done
  done
done
el decode
timeout 150 $B/tests/kernels/sample_test > $R/sample_test.txt 2>&1; el "sample_test rc $?"
grep -E "PASSED|FAILED" $R/sample_test.txt >> $L
tar czf $OUT/d.tgz -C $R .
