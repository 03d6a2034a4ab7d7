#!/usr/bin/env bash
# The store's CLI end to end against the loopback hub: pull (URL, --id), list, verify --md5, rm (evict),
# rm --forget, add, list --catalog, recommend --device-json, and typed errors with --json. Usage: store_cli_test.sh EWGPU
set -euo pipefail
EWGPU=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ewgpu-store-cli-XXXXXX")
HUB_PID=""
cleanup() { [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
export EWGPU_CACHE_DIR="$WORK/cache"
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }


python3 - "$WORK/hub/org/cli-MLC" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]; os.makedirs(d)
recs = []
for i in range(3):
    b = os.urandom(50000 + i * 1000)
    open(f"{d}/params_shard_{i}.bin", "wb").write(b)
    recs.append({"dataPath": f"params_shard_{i}.bin", "format": "raw-shard", "nbytes": len(b),
                 "md5sum": hashlib.md5(b).hexdigest(), "records": []})
json.dump({"records": recs}, open(f"{d}/tensor-cache.json", "w"))
json.dump({"model_type": "qwen2", "tokenizer_files": ["tokenizer.json"]}, open(f"{d}/mlc-chat-config.json", "w"))
open(f"{d}/tokenizer.json", "w").write("{}")
PY
exec 3< <(python3 "$HERE/fake_hub.py" --root "$WORK/hub")
HUB_PID=$!
read -r PORT <&3
URL="http://127.0.0.1:$PORT/org/cli-MLC"

out=$("$EWGPU" pull "$URL" --id cli --json)
[ "$(echo "$out" | field '["id"]')" = cli ] || fail "pull id: $out"
[ "$(echo "$out" | field '["bytes"]')" -gt 150000 ] || fail "pull bytes: $out"
cmp "$WORK/hub/org/cli-MLC/params_shard_2.bin" "$(echo "$out" | field '["dir"]')/params_shard_2.bin" || fail "shard differs"
"$EWGPU" verify cli --md5 --json | grep -q '"ok":true' || fail "verify"
[ "$("$EWGPU" list --json | field '["models"][0]["state"]')" = cached ] || fail "list state"
"$EWGPU" rm cli --json >/dev/null
[ "$("$EWGPU" list --json | field '["models"][0]["state"]')" = absent ] || fail "evicted state"
err=$("$EWGPU" verify cli --json 2>&1 >/dev/null || true)
[ "$(echo "$err" | field '["error"]["code"]')" = CACHE_INCOMPLETE ] || fail "verify after evict: $err"
"$EWGPU" pull cli --json >/dev/null  # the record kept its URL
"$EWGPU" rm cli --forget --json >/dev/null
[ "$("$EWGPU" list --json | field '["models"].__len__()')" = 0 ] || fail "forget"
err=$("$EWGPU" pull no-such-model --json 2>&1 >/dev/null || true)
[ "$(echo "$err" | field '["error"]["code"]')" = UNKNOWN_MODEL ] || fail "unknown: $err"

# A local folder the model layer accepts, written by `ewgpu make-tiny` with a small tokenizer.
python3 -c '
import json, sys
vocab = {"t%d" % i: i for i in range(200)}
added = [{"id": 200 + i, "content": c, "special": True} for i, c in enumerate(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])]
json.dump({"version": "1.0", "added_tokens": added, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": vocab, "merges": []}}, open(sys.argv[1], "w"))
' "$WORK/tok.json"
"$EWGPU" make-tiny "$WORK/tiny" --tokenizer "$WORK/tok.json" --arch qwen2 >/dev/null || fail "make-tiny"
added=$("$EWGPU" add "$WORK/tiny" --id tiny --json)
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert "url" not in r and "://" not in sys.argv[1], r' "$added" \
  || fail "local record carries a URL: $added"
# A folder of an architecture the engine does not run (Phi-3.5-vision's phi3_v) is UNSUPPORTED, naming it.
cp -r "$WORK/tiny" "$WORK/vision"
python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["model_type"]="phi3_v"; json.dump(d, open(p,"w"))' \
  "$WORK/vision/mlc-chat-config.json"
err=$("$EWGPU" show "$WORK/vision" --json 2>&1 || true)
[ "$(echo "$err" | field '["error"]["code"]')" = UNSUPPORTED ] || fail "phi3_v folder: $err"
echo "$err" | grep -q "model_type 'phi3_v'" || fail "phi3_v not named: $err"
"$EWGPU" rm tiny >/dev/null
err=$("$EWGPU" prefetch tiny --json 2>&1 >/dev/null || true)
echo "$err" | grep -q "re-register the folder" || fail "evicted local: $err"
err=$("$EWGPU" add "$WORK/hub" --json 2>&1 >/dev/null || true)
[ "$(echo "$err" | field '["error"]["code"]')" = INVALID_MODEL_FOLDER ] || fail "bad folder: $err"

cat > "$WORK/dev.json" <<'J'
{"adapter": {"type": "discrete-gpu"}, "features": {"shader-f16": true},
 "limits": {"maxStorageBufferBindingSize": 2147483648, "maxBufferSize": 2147483648},
 "memory_heaps": [{"size": 4294967296, "properties": 1}]}
J
# list --catalog marks every catalogue entry runnable or not, with the reason (docs/store.md "Architectures").
"$EWGPU" list --catalog --json > "$WORK/catalog.json"
python3 - "$WORK/catalog.json" <<'PY' || fail "list --catalog"
import json, sys
rows = [m for m in json.load(open(sys.argv[1]))["models"] if m["state"] == "catalogue"]
assert len(rows) == 165, len(rows)
by_id = {m["id"]: m for m in rows}
assert by_id["Llama-3.2-1B-Instruct-q4f16_1-MLC"]["runnable"] is True and by_id["Llama-3.2-1B-Instruct-q4f16_1-MLC"]["reason"] == ""
v = by_id["Phi-3.5-vision-instruct-q4f16_1-MLC"]
assert v["runnable"] is False and v["reason"].startswith("architecture phi3_v: a vision-language model"), v
assert all(m["runnable"] == (m["reason"] == "") for m in rows)
assert all(m["arch"] in m["reason"] for m in rows if not m["runnable"])
PY
listing=$("$EWGPU" list --catalog)  # (not piped into grep -q: pipefail would see ewgpu's SIGPIPE)
echo "$listing" | grep -q '^Phi-3.5-vision-instruct-q4f16_1-MLC  *catalogue .* prebuilt no: architecture phi3_v: ' \
  || fail "list --catalog text"
echo "$listing" | grep -q '^Llama-3.2-1B-Instruct-q4f16_1-MLC  *catalogue .* prebuilt yes$' || fail "list --catalog yes"

rec=$("$EWGPU" recommend --device-json "$WORK/dev.json" --limit 50 --json)
python3 -c '
import json, sys
r = json.loads(sys.argv[1])["models"]
runnable = {m["id"] for m in json.load(open(sys.argv[2]))["models"] if m.get("runnable")}
assert r, "no recommendation"
assert all(m["vram_required_MB"] <= 4096 for m in r), "over the device memory"
assert all(m["model_id"] in runnable for m in r), "a recommendation list --catalog calls not runnable"
assert [m["params_b"] for m in r] == sorted((m["params_b"] for m in r), reverse=True), "quality order"
' "$rec" "$WORK/catalog.json" || fail "recommend"
echo "store CLI: ok"
