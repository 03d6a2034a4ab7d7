#!/usr/bin/env bash
# Session 27 call b: decode x̂ as one int8 digit in every projection (ForwardOptions::activations kAuto, now kInt8
# for every family but qwen3_5, gemma2 and gemma4) against the previous default (EWGPU_GEMV_Q8=2: two digits outside
# the MLP). fixture_test (the transformers fixtures, with TransformersFixtureInt8 now at 2e-2), forward_test's digit
# rules, batch_test, gemv_test's kernel choice; bench decode (one-row engines, K = 16) and bench concurrent (32-row
# engines, 1 / 16 / 32 streams), ABAB, Qwen3-0.6B and Llama-3.2-1B shapes.
set -uo pipefail
R=$OUT/b
. bench/h200_prologue.sh
timeout 200 $B/tests/runtime/fixture_test > $R/fixture_test.txt 2>&1; el "fixture_test rc $?"
timeout 60 $B/tests/runtime/forward_test --gtest_filter='MlpDigits.*' > $R/forward_test.txt 2>&1; el "forward_test rc $?"
timeout 60 $B/tests/kernels/gemv_test --gtest_filter='GemvBatch.GemmKernelChoice' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
timeout 120 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
for shape in qwen3-0.6b llama-3.2-1b; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  el "made $shape"
  for v in two one two one; do
    E=EWGPU_X=1
    [ $v = two ] && E=EWGPU_GEMV_Q8=2
    echo "== $shape $v ($E)" >> $R/decode-$shape.txt
    env $E timeout 60 $B/ewgpu bench decode /tmp/m-$shape --steps 16 --tokens 256 >> $R/decode-$shape.txt 2>&1
    el "decode $shape $v rc $?"
  done
  if [ $shape = llama-3.2-1b ]; then
    for v in two one two one; do
      E=EWGPU_X=1
      [ $v = two ] && E=EWGPU_GEMV_Q8=2
      echo "== $shape $v ($E)" >> $R/concurrent-$shape.txt
      env $E timeout 100 $B/ewgpu bench concurrent /tmp/m-$shape --streams 1,16,32 --tokens 128 \
        --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-$shape.txt 2>&1
      el "concurrent $shape $v rc $?"
    done
  fi
  rm -rf /tmp/m-$shape
done
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
grep -h "Int8\|\[ fixture" $R/fixture_test.txt | head -40
for f in $R/decode-*.txt; do grep -E "^== |^  16 |dispatches per token" $f; done
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|16|32) \|" $f | head -40; done
cat $L
