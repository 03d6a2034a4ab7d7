#!/usr/bin/env bash
# Session 19 call 1: the greedy batch's sampler in two dispatches (phases 1 and 4 of the split step) against the one
# dispatch, the sampler's reductions by subgroup shuffles against workgroup memory; greedy and sampled decode, the
# kernel tests on the H200.
set -uo pipefail
R=${OUT:-/tmp/out}; mkdir -p $R
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
dec() {  # label file env... -- args...
  local label=$1 file=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  printf "%-40s" "$label" >> $R/$file
  env "${envs[@]}" $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 |dispatches per token" | tr '\n' ' ' >> $R/$file
  echo >> $R/$file
}
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  M=/tmp/m-$shape
  el "made $shape"
  for rep in 1 2; do
    dec "$shape greedy old" greedy.txt EWGPU_SAMPLE_ARGMAX=whole EWGPU_SAMPLE_SG=0 -- $M --steps 16 --tokens 256
    dec "$shape greedy argmax" greedy.txt EWGPU_SAMPLE_ARGMAX=split EWGPU_SAMPLE_SG=0 -- $M --steps 16 --tokens 256
    dec "$shape greedy sg" greedy.txt EWGPU_SAMPLE_ARGMAX=whole EWGPU_SAMPLE_SG=1 -- $M --steps 16 --tokens 256
    dec "$shape greedy new" greedy.txt EWGPU_X=1 -- $M --steps 16 --tokens 256
  done
  el "greedy $shape"
  for rep in 1 2; do
    dec "$shape t0.6 p0.95 sg0" sampled.txt EWGPU_SAMPLE_SG=0 -- $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    dec "$shape t0.6 p0.95 new" sampled.txt EWGPU_X=1 -- $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    dec "$shape greedy new" sampled.txt EWGPU_X=1 -- $M --steps 16 --tokens 256
  done
  el "sampled $shape"
  $B/ewgpu bench decode $M --steps 16 --tokens 128 --profile > $R/profile-greedy-$shape.txt 2>&1
  $B/ewgpu bench decode $M --steps 16 --tokens 128 --profile --temperature 0.6 --top-p 0.95 > $R/profile-sampled-$shape.txt 2>&1
  rm -rf $M
done
el "benches done"
timeout 200 $B/tests/runtime/forward_test > $R/forward_test.txt 2>&1; el "forward_test rc $?"
timeout 200 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
tail -3 $R/forward_test.txt $R/batch_test.txt $R/sample_test.txt >> $L
ls $R
