#!/usr/bin/env bash
# Session 21 call b: the sampler's workgroup size (EWGPU_SAMPLE_WG 1024 = the default, 512, 256), ABAB: decode K=16
# greedy / T0.7 p0.8 k20 / T0.6 p0.95 on the three shapes; the 32-row engine (1B) greedy and sampled at 16 and 32 streams.
set -uo pipefail
R=/tmp/rb; mkdir -p $R
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
for rep in 1 2; do
  for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
    M=/tmp/m-$shape
    for v in old-ewgpu:1024 ewgpu:1024 ewgpu:512 ewgpu:256; do
      bin=${v%:*}; wg=${v#*:}
      EWGPU_SAMPLE_WG=$wg dec "$shape greedy $bin wg$wg" decode.txt $bin $M --steps 16 --tokens 256
      EWGPU_SAMPLE_WG=$wg dec "$shape k20 $bin wg$wg" decode.txt $bin $M --steps 16 --tokens 256 --temperature 0.7 --top-p 0.8 --top-k 20
      EWGPU_SAMPLE_WG=$wg dec "$shape p0.95 $bin wg$wg" decode.txt $bin $M --steps 16 --tokens 256 --temperature 0.6 --top-p 0.95
    done
  done
done
el decode
M=/tmp/m-llama-3.2-1b
for wg in 1024 512; do
  EWGPU_SAMPLE_WG=$wg timeout 100 $B/ewgpu bench concurrent $M --streams 1,16,32 --tokens 128 > $R/conc-greedy-wg$wg.txt 2>&1
  el "conc greedy $wg"
  EWGPU_SAMPLE_WG=$wg timeout 100 $B/ewgpu bench concurrent $M --streams 16,32 --tokens 128 --temperature 0.6 --top-p 0.95 > $R/conc-p95-wg$wg.txt 2>&1
  el "conc p95 $wg"
done
timeout 150 $B/tests/kernels/sample_test > $R/sample_test.txt 2>&1; el "sample_test rc $?"
tar czf $OUT/b.tgz -C $R .
