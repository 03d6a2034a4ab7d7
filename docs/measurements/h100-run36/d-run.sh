#!/usr/bin/env bash
# Session 27 call d: the committed defaults (060d7cd) as they are, no overrides: bench decode (one-row engine, two
# digits outside the MLP) and bench concurrent in 4- and 32-row engines (one digit everywhere), Llama-3.2-1B shape.
set -uo pipefail
R=$OUT/d
. bench/h200_prologue.sh
$B/ewgpu make-tiny /tmp/m --shape llama-3.2-1b --quant q4f16_1 --tokenizer $TOK > /dev/null
timeout 60 $B/ewgpu bench decode /tmp/m --steps 16 --tokens 256 > $R/decode-llama-3.2-1b.txt 2>&1; el "decode rc $?"
for s in 1,2,4 1,16,32; do
  echo "== streams $s" >> $R/concurrent-llama-3.2-1b.txt
  timeout 100 $B/ewgpu bench concurrent /tmp/m --streams $s --tokens 128 --fp32-tflops 65.4 --int8-tops 120 \
    >> $R/concurrent-llama-3.2-1b.txt 2>&1
  el "concurrent $s rc $?"
done
grep -E "dispatches per token|^  16 " $R/decode-llama-3.2-1b.txt
grep -E "^== |^\| +(1|2|4|16|32) \|" $R/concurrent-llama-3.2-1b.txt
cat $L
