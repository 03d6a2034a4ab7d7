#!/usr/bin/env bash
# Session 21 call c: the split sampler's phases on 512 threads (the new default), against 1024 (before: the one
# dispatch's size) and 256, by EWGPU_SAMPLE_SPLIT_WG, ABAB: decode K=16 greedy / T0.7 p0.8 k20 / T0.6 p0.95 on the
# three shapes; greedy after 128 / 1024 / 4000 positions (0.6B, 1B); the 32-row engine (1B); sample_test, batch_test.
set -uo pipefail
R=/tmp/rc; mkdir -p $R
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
dec() { local name=$1 file=$2; shift 2; printf "%-40s" "$name" >> $R/$file; timeout 60 $B/ewgpu bench decode "$@" 2>&1 | grep -E "^ +16 " >> $R/$file; }
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
done
el made
for rep in 1 2; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    for wg in 1024 512 256; do
      EWGPU_SAMPLE_SPLIT_WG=$wg dec "$shape greedy split-wg$wg" decode.txt $M --steps 16 --tokens 256
      EWGPU_SAMPLE_SPLIT_WG=$wg dec "$shape k20 split-wg$wg" decode.txt $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      EWGPU_SAMPLE_SPLIT_WG=$wg dec "$shape p0.95 split-wg$wg" decode.txt $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    done
  done
done
el decode
for rep in 1 2; do
  for shape in qwen3-0.6b llama-3.2-1b; do
    for p in 128 1024 4000; do
      dec "$shape p=$p" positions.txt /tmp/m-$shape --steps 16 --tokens 128 --prompt-tokens $p --context 4608
    done
  done
done
el positions
M=/tmp/m-llama-3.2-1b
timeout 100 $B/ewgpu bench concurrent $M --streams 1,16,32 --tokens 128 > $R/conc-greedy.txt 2>&1
el "conc greedy"
timeout 100 $B/ewgpu bench concurrent $M --streams 1,16,32 --tokens 128 --temperature 0.6 --top-p 0.95 > $R/conc-p95.txt 2>&1
el "conc p95"
for t in kernels/sample_test runtime/batch_test; do
  n=$(basename $t)
  timeout 150 $B/tests/$t > $R/$n.txt 2>&1; el "$n rc $?"
  grep -E "PASSED|FAILED" $R/$n.txt >> $L
done
tar czf $OUT/c.tgz -C $R .
