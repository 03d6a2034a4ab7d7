#!/usr/bin/env bash
# Session 19 call 2 (call 1's sampled figures and kernel test log did not come back: too many files): sampled
# against greedy with the new sampler and the old (one-dispatch argmax, reductions through workgroup memory), ABAB;
# the sampler's cost per setting with SG on and off; sample_test on the H200. Everything in one tarball.
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
$B/ewgpu probe > $L 2>&1
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
timeout 240 $B/tests/kernels/sample_test > $R/sample_test.txt 2>&1; el "sample_test rc $?"
EWGPU_SAMPLE_SG=0 timeout 60 $B/tests/kernels/sample_test --gtest_filter=SampleKernel.ReportsDispatchCost > $R/sample_cost_sg0.txt 2>&1
el "sample cost sg0 rc $?"
dec() {  # label env... -- args...
  local label=$1; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  printf "%-40s" "$label" >> $R/sampled.txt
  env "${envs[@]}" $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/sampled.txt
}
OLD="EWGPU_SAMPLE_ARGMAX=whole EWGPU_SAMPLE_SG=0"
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  M=/tmp/m-$shape
  el "made $shape"
  for rep in 1 2; do
    for v in old new; do
      E=EWGPU_X=1; [ $v = old ] && E=$OLD
      dec "$shape $v greedy" $E -- $M --steps 16 --tokens 256
      dec "$shape $v t0.6 p0.95" $E -- $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
      dec "$shape $v t0.7 p0.8 k20" $E -- $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
    done
  done
  el "sampled $shape"
  rm -rf $M
done
tar czf $OUT/b.tgz -C $R .
