#!/usr/bin/env bash
# Session 18 call 1: decode attention p·v loads PVU at a time; one range (no merge) early in a sequence; the
# single-row int8 GEMV's first weight group loaded before its prologue.
set -uo pipefail
R=${OUT:-/tmp/out}; mkdir -p $R
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
$B/ewgpu probe > $L 2>&1
el() { echo "[$(( $(date +%s) - T0 )) s] $*" >> $L; }
$B/tests/kernels/attention_test > $R/kernel_tests.txt 2>&1; el "attention_test rc $?"
$B/tests/kernels/gemv_test >> $R/kernel_tests.txt 2>&1; el "gemv_test rc $?"
for shape in llama-3.2-1b qwen3-0.6b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for p in 128 512 1024 4000; do
    for v in old new old new noshort nopf pvu4 one; do
      case $v in
        old) e="EWGPU_ATTN_PVU=1 EWGPU_ATTN_SHORT=0 EWGPU_GEMV_PREFETCH=0";;
        new) e="EWGPU_ADAPTER=gpu";;
        noshort) e="EWGPU_ATTN_SHORT=0";;
        nopf) e="EWGPU_GEMV_PREFETCH=0";;
        pvu4) e="EWGPU_ATTN_PVU=4";;
        one) e="EWGPU_ATTN_SPLIT=1";;
      esac
      printf "%s p=%-4s %-7s" $shape $p $v >> $R/ab.txt
      env $e $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608 2>&1 \
        | grep -E "^ +16 " >> $R/ab.txt
    done
  done
  el "ab $shape"
  EWGPU_ATTN_SHORT=0 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 4000 --context 4608 \
    --profile > $R/profile-$shape.txt 2>&1
  $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 --prompt-tokens 128 --context 4608 \
    --profile >> $R/profile-$shape.txt 2>&1
  el "profiles $shape"
  rm -rf /tmp/m-$shape
done
shape=qwen3.5-2b
$B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null
for p in 128 4000; do
  for v in old new old new; do
    case $v in old) e="EWGPU_ATTN_PVU=1 EWGPU_ATTN_SHORT=0 EWGPU_GEMV_PREFETCH=0";; new) e="EWGPU_ADAPTER=gpu";; esac
    printf "%s p=%-4s %-7s" $shape $p $v >> $R/ab.txt
    env $e $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608 2>&1 \
      | grep -E "^ +16 " >> $R/ab.txt
  done
done
el "2b"
EWGPU_SOURCE_DIR=$PWD EWGPU_ATTN_SHORT=30 timeout 120 $B/tests/runtime/forward_test \
  --gtest_filter='AllArchitectures/*q4f16_1*' > $R/forward_test.txt 2>&1; el "forward_test rc $?"
ls $R
