#!/usr/bin/env bash
# Converts the trained checkpoint (models/default/hf, written by train.py) into the committed MLC folder with the
# project's own converter, then sets the folder's request defaults: sampling that suits a 5.8M-parameter model
# (temperature 0.7, top-p 0.9, repetition penalty 1.1) and a template named for it (the chatml layout the
# training data used, with the system message it was trained with).
# Usage: tools/default_model/convert.sh [EWGPU_BINARY]   (default build/ewgpu), from the repository root.
set -euo pipefail
ewgpu="${1:-build/ewgpu}"
src=models/default/hf
out=models/default/q4f16_1
rm -rf "$out"
"$ewgpu" convert "$src" "$out" --tokenizer "$src/tokenizer.json" --quant q4f16_1
python3 - "$out/mlc-chat-config.json" <<'PY'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["temperature"], j["top_p"], j["repetition_penalty"] = 0.7, 0.9, 1.1
t = j["conv_template"]
t["name"] = "ewgpu-default"
t.pop("strip_reasoning_in_history", None)
t["system_message"] = "You are a helpful assistant."
with open(p, "w") as f:
    json.dump(j, f, indent=2, sort_keys=True)
    f.write("\n")
PY
"$ewgpu" inspect "$out" --md5
