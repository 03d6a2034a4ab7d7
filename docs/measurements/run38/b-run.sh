#!/usr/bin/env bash
# Session 30 (written in session 29, which got no device for it): one-row GEMVs pulling the next projection's weights into the L2
# (EWGPU_GEMV_L2=1) against off (the default) and against every layer reading the first layer's weights
# (EWGPU_X_SAME_LAYER=1: build with same-layer.patch applied; the bound this can reach), ABAB, K = 16;
# EWGPU_GEMV_L2_MB=4 (touch at most 4 MB ahead), EWGPU_GEMV_L2_LOADS=8 and 32 (sectors per thread); prefill at
# 512 / 4096 tokens with attention_prefill's default lanes against EWGPU_ATTN_LANES=4 (Qwen3-0.6B) / 2 (the 1B);
# then the tests with the touches on (and TiledPrefillAttention with every lane count).
set -uo pipefail
R=$OUT/b
. bench/h200_prologue.sh
timeout 120 $B/tests/kernels/gemv_test --gtest_filter='GemvOp.*:Gemv.*' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
for s in qwen3-0.6b llama-3.2-1b qwen3.5-2b; do
  $B/ewgpu make-tiny /tmp/m --shape $s --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made $s"
  for r in 1 2; do
    for v in off on same cap4 loads8 loads32; do
      E=EWGPU_GEMV_L2=0
      [ $v = on ] && E=EWGPU_GEMV_L2=1
      [ $v = same ] && E=EWGPU_X_SAME_LAYER=1
      [ $v = cap4 ] && E="EWGPU_GEMV_L2=1 EWGPU_GEMV_L2_MB=4"
      [ $v = loads8 ] && E="EWGPU_GEMV_L2=1 EWGPU_GEMV_L2_LOADS=8"
      [ $v = loads32 ] && E="EWGPU_GEMV_L2=1 EWGPU_GEMV_L2_LOADS=32"
      echo "== $s $v ($E)" >> $R/decode.txt
      env $E timeout 100 $B/ewgpu bench decode /tmp/m --steps 16 --tokens 256 >> $R/decode.txt 2>&1
      el "$s $v rc $?"
    done
  done
  for v in off on; do
    E=EWGPU_GEMV_L2=0
    [ $v = on ] && E=EWGPU_GEMV_L2=1
    echo "== $s $v ($E) profile" >> $R/profile-$s.txt
    env $E timeout 100 $B/ewgpu bench decode /tmp/m --steps 16 --tokens 64 --profile >> $R/profile-$s.txt 2>&1
    el "$s profile $v rc $?"
  done
  # attention_prefill's lanes: the default (2 for heads of 128, 1 for 64) against 4 / 2, ABAB
  alt=4; [ $s = llama-3.2-1b ] && alt=2
  if [ $s != qwen3.5-2b ]; then
    for v in def $alt def $alt; do
      E=EWGPU_GEMV_L2=0
      [ $v != def ] && E=EWGPU_ATTN_LANES=$v
      echo "== $s lanes $v ($E)" >> $R/prefill.txt
      env $E timeout 100 $B/ewgpu bench prefill /tmp/m --lengths 512,4096 >> $R/prefill.txt 2>&1
      el "$s prefill lanes $v rc $?"
    done
  fi
  rm -rf /tmp/m
done
EWGPU_GEMV_L2=1 timeout 60 $B/tests/runtime/fixture_test --gtest_filter='TransformersFixtureInt16*:TransformersFixtureMixedDecode*' > $R/fixture_test.txt 2>&1; el "fixture_test rc $?"
EWGPU_GEMV_L2=1 timeout 80 $B/tests/runtime/forward_test --gtest_filter='KernelLimits.*:*Int16Activations*:*Int8Activations*:TiledPrefillAttention.*' > $R/forward_test.txt 2>&1; el "forward_test rc $?"
