tar xJf build-h200/carry.tar.xz; for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json LD_LIBRARY_PATH=$PWD/build-h200/lib EWGPU_ADAPTER=gpu
B=build-h200; TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
for s in llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m-$s --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null
  for sp in default 16 32 64; do for p in 128 4000; do
    if [ $sp = default ]; then unset EWGPU_ATTN_SPLIT; else export EWGPU_ATTN_SPLIT=$sp; fi
    r=$($B/ewgpu bench decode /tmp/m-$s --steps 16 --tokens 128 --prompt-tokens $p --context 4300 2>&1 | grep "^  16")
    echo "$s split $sp prompt $p: $r" | tee -a $OUT/split-sweep.txt
  done; done
done
unset EWGPU_ATTN_SPLIT
$B/ewgpu bench decode /tmp/m-llama-3.2-1b --steps 16 --tokens 64 --prompt-tokens 4000 --context 4300 --profile --profile-repeat 5 > $OUT/profile-1b-4000.txt 2>&1
grep -i "attention\|total" $OUT/profile-1b-4000.txt | head -20
