#!/usr/bin/env bash
# The run that made the committed model: three settings of train.py on the same data, and the one with the lowest
# held-out perplexity (fp weights) copied to OUT. Usage: sweep.sh DATA_DIR OUT_DIR
set -euo pipefail
data="$1"; out="$2"; here="$(cd "$(dirname "$0")" && pwd)"
python3 "$here/train.py" "$data" /tmp/sweep-a --steps 1400                                  # 6 layers, intermediate 768
python3 "$here/train.py" "$data" /tmp/sweep-b --steps 1400 --layers 8 --intermediate 640    # deeper, same size budget
python3 "$here/train.py" "$data" /tmp/sweep-c --steps 1400 --wd 0.3                         # stronger weight decay
best=$(python3 -c '
import json, sys
r = {d: json.load(open(f"/tmp/sweep-{d}/reference.json"))["heldout_ppl_fp"] for d in "abc"}
print(min(r, key=r.get))')
for d in a b c; do echo "== sweep-$d"; cat /tmp/sweep-$d/train.log | grep -v "^model:"; done > "$out/sweep.log"
echo "best: sweep-$best" | tee -a "$out/sweep.log"
cp /tmp/sweep-$best/{config.json,generation_config.json,model.safetensors,tokenizer.json,reference.json,samples.txt,train.log} "$out/"
