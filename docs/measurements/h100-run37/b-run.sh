#!/usr/bin/env bash
# Session 28 call b: Qwen3.5 in engines of more than one row with x̂ as one int8 digit everywhere but its GDN
# projections (ForwardOptions::gdn_digits auto: two there) against the previous default (EWGPU_GEMV_Q8=2: two digits
# but in the MLP). fixture_test's quantized-x̂ cases (TransformersFixtureMultiRowDecode new), forward_test's digit
# rules, batch_test with every architecture at every row count (EWGPU_BATCH_TEST_FULL=1), GemvBatch.GemmTilesKeepTheBits;
# bench concurrent ABAB for the 2B in 32-row engines (1 / 16 / 32 streams); the 1B's GPU step
# per family without repeats (--profile-repeat 1) and with the KV-group attention (EWGPU_ATTN_GQA=1);
# GemvBatchBench.ModelShapes (1B shapes) with the weights read from memory.
set -uo pipefail
R=$OUT/b
. bench/h200_prologue.sh
timeout 100 $B/tests/runtime/fixture_test --gtest_filter='TransformersFixture*Int*:TransformersFixtureM*' > $R/fixture_test.txt 2>&1; el "fixture_test rc $?"
timeout 60 $B/tests/runtime/forward_test --gtest_filter='MlpDigits.*' > $R/forward_test.txt 2>&1; el "forward_test rc $?"
timeout 60 $B/tests/kernels/gemv_test --gtest_filter='GemvBatch.GemmTilesKeepTheBits' > $R/gemv_test.txt 2>&1; el "gemv_test rc $?"
EWGPU_BATCH_TEST_FULL=1 timeout 120 $B/tests/runtime/batch_test > $R/batch_test.txt 2>&1; el "batch_test rc $?"
$B/ewgpu make-tiny /tmp/m2 --shape qwen3.5-2b --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made 2b"
for s in 1,16,32; do
  for v in old new old new; do
    E=EWGPU_X=1
    [ $v = old ] && E=EWGPU_GEMV_Q8=2
    echo "== qwen3.5-2b streams $s $v ($E)" >> $R/concurrent-qwen3.5-2b.txt
    env $E timeout 100 $B/ewgpu bench concurrent /tmp/m2 --streams $s --tokens 128 --fp32-tflops 65.4 --int8-tops 120 \
      >> $R/concurrent-qwen3.5-2b.txt 2>&1
    el "2b $s $v rc $?"
  done
done
rm -rf /tmp/m2
$B/ewgpu make-tiny /tmp/m1 --shape llama-3.2-1b --quant q4f16_1 --tokenizer $TOK > /dev/null; el "made 1b"
for v in base gqa once; do
  E=EWGPU_X=1
  P=5
  [ $v = gqa ] && E=EWGPU_ATTN_GQA=1
  [ $v = once ] && P=1
  echo "== llama-3.2-1b $v ($E, profile repeat $P)" >> $R/concurrent-llama-3.2-1b.txt
  env $E timeout 100 $B/ewgpu bench concurrent /tmp/m1 --streams 1,16,32 --tokens 128 --fp32-tflops 65.4 \
    --int8-tops 120 --profile-repeat $P >> $R/concurrent-llama-3.2-1b.txt 2>&1
  el "1b $v rc $?"
done
rm -rf /tmp/m1
EWGPU_GEMVB_BENCH=1 timeout 45 $B/tests/kernels/gemv_test --gtest_filter='GemvBatchBench.*' 2>&1 | grep "bench \]" > $R/bench.txt
el "bench rc $?"
grep -hE "PASSED|FAILED" $R/*_test*.txt >> $L
grep -h "fixture \] qwen3_5" $R/fixture_test.txt
for f in $R/concurrent-*.txt; do grep -E "^== |^\| +(1|2|4|16|32) \|" $f | head -80; done
cat $L
