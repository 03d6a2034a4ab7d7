#!/usr/bin/env bash
# Session 27 call c: x̂ as one digit everywhere (EWGPU_GEMV_Q8=1) against two outside the MLP (=2) in 4- and 8-row
# engines (gemv_batch.wgsl, the engine's default of 4 rows), Llama-3.2-1B shape, ABAB.
set -uo pipefail
R=$OUT/c
. bench/h200_prologue.sh
$B/ewgpu make-tiny /tmp/m --shape llama-3.2-1b --quant q4f16_1 --tokenizer $TOK > /dev/null
for s in 1,2,4 1,8; do
  for v in 2 1 2 1; do
    echo "== streams $s EWGPU_GEMV_Q8=$v" >> $R/concurrent-llama-3.2-1b.txt
    EWGPU_GEMV_Q8=$v timeout 60 $B/ewgpu bench concurrent /tmp/m --streams $s --tokens 128 \
      --fp32-tflops 65.4 --int8-tops 120 >> $R/concurrent-llama-3.2-1b.txt 2>&1
    el "streams $s q8 $v rc $?"
  done
done
grep -E "^== |^\| +(1|2|4|8) \|" $R/concurrent-llama-3.2-1b.txt
cat $L
