#!/usr/bin/env bash
# Call b: the staging-ring upload (default) against queue writes (EWGPU_UPLOAD_RING=0), load stages with real tokenizers.
set -uo pipefail
R=${OUT:-/tmp/out}; mkdir -p $R
tar xJf .h200/pack.tar.xz
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export LD_LIBRARY_PATH=$PWD/build-h200/lib:${LD_LIBRARY_PATH:-}
export EWGPU_ADAPTER=gpu
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
$B/ewgpu probe > $R/probe.txt 2>&1
for v in EWGPU_UPLOAD_RING=1 EWGPU_UPLOAD_RING=0; do
  echo "== $v" >> $R/run_tiny.txt
  env $v $B/ewgpu run tests/fixtures/qwen3_5_tiny/q4f16_1 "Hello" --chat --max-tokens 16 --temperature 0 >> $R/run_tiny.txt 2>&1
done
$B/ewgpu bench gpu --upload 1073741824 --threads 8 > $R/upload.txt 2>&1
for shape in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  tok=$TOK
  case $shape in qwen3-0.6b) tok=.h200/qwen3-tokenizer.json;; llama-3.2-1b) tok=.h200/llama3-tokenizer.json;; esac
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $tok > /dev/null || continue
  cat /tmp/m-$shape/* > /dev/null
  cache=$(mktemp -d)
  f=$R/load-$shape.txt
  for v in "cold|" "warm|" "queue|EWGPU_UPLOAD_RING=0" "warm|" "queue|EWGPU_UPLOAD_RING=0" "threads1|EWGPU_UPLOAD_THREADS=1" "warm|" "threads8|EWGPU_UPLOAD_THREADS=8"; do
    IFS='|' read -r name envs <<< "$v"
    env XDG_CACHE_HOME=$cache __GL_SHADER_DISK_CACHE_PATH=$cache $envs $B/ewgpu run /tmp/m-$shape "Hi" --max-tokens 1 \
      --json > /tmp/j.json 2>> $R/stderr-$shape.txt
    echo "rc=$?" >> $R/stderr-$shape.txt
    python3 -c "
import json, os, sys
j = json.load(open('/tmp/j.json'))['timings']
gb = sum(os.path.getsize(os.path.join('/tmp/m-$shape', n)) for n in os.listdir('/tmp/m-$shape')) / 1e9
st = ' '.join(f'{k} {v:.1f}' for k, v in sorted(j['load_ms_by_stage'].items()))
print(f'$name: load {j[\"load_ms\"]:.1f} ms, {gb:.3f} GB, {j[\"load_ms\"] / 1000 / gb:.2f} s/GB | {st}')" >> "$f" 2>> $R/stderr-$shape.txt
  done
  $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 64 > $R/decode-$shape.txt 2>&1
  rm -rf $cache /tmp/m-$shape
done
