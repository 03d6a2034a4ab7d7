#!/usr/bin/env bash
# Benchmark of the model store: pull a generated model folder of random shards from the loopback fake hub
# (tests/store/fake_hub.py), then verify it with md5. Prints a table of sizes, times and rates.
#   bench/store_pull.sh [SIZE_MB=1024] [SHARD_MB=32] [PARALLEL=4]
# Needs a built ./build/ewgpu (cmake --build build --target ewgpu) and python3.
set -euo pipefail
SIZE_MB=${1:-1024}
SHARD_MB=${2:-32}
PARALLEL=${3:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EWGPU=${EWGPU:-$ROOT/build/ewgpu}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ewgpu-bench-store-XXXXXX")
HUB_PID=""
cleanup() { [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# A model folder of random shards with md5sums in tensor-cache.json.
python3 - "$WORK/hub/bench/rand-MLC" "$SIZE_MB" "$SHARD_MB" <<'PY'
import hashlib, json, os, sys
out, size_mb, shard_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out)
records, left, i = [], size_mb << 20, 0
while left > 0:
    n = min(left, shard_mb << 20)
    data = os.urandom(n)
    name = "params_shard_%d.bin" % i
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    records.append({"dataPath": name, "format": "raw-shard", "nbytes": n, "md5sum": hashlib.md5(data).hexdigest(),
                    "records": [{"name": "w%d" % i, "shape": [n // 4096, 1024], "dtype": "uint32",
                                 "format": "f32-to-bf16", "nbytes": n, "byteOffset": 0}]})
    left -= n
    i += 1
json.dump({"metadata": {"ParamSize": i}, "records": records}, open(os.path.join(out, "tensor-cache.json"), "w"))
json.dump({"model_type": "llama", "quantization": "q4f16_1", "tokenizer_files": ["tokenizer.json"]},
          open(os.path.join(out, "mlc-chat-config.json"), "w"))
json.dump({"model": {"type": "BPE", "vocab": {}}}, open(os.path.join(out, "tokenizer.json"), "w"))
PY

exec 3< <(python3 "$ROOT/tests/store/fake_hub.py" --root "$WORK/hub")
HUB_PID=$!
read -r PORT <&3
URL="http://127.0.0.1:$PORT/bench/rand-MLC/resolve/main/"

pull_json=$("$EWGPU" pull "$URL" --cache-dir "$WORK/cache" --parallel "$PARALLEL" --json)
sync
echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true  # cold verify when permitted (root); warm otherwise
verify_json=$("$EWGPU" verify rand-MLC --md5 --cache-dir "$WORK/cache" --json)
warm_json=$("$EWGPU" verify rand-MLC --md5 --cache-dir "$WORK/cache" --json)  # files now in the page cache
size_json=$("$EWGPU" verify rand-MLC --cache-dir "$WORK/cache" --json)

python3 - "$pull_json" "$verify_json" "$size_json" "$SHARD_MB" "$PARALLEL" "$warm_json" <<'PY'
import json, sys
pull, ver, sizes = (json.loads(x) for x in sys.argv[1:4])
warm = json.loads(sys.argv[6])
mb = pull["bytes"] / 2**20
print("| measurement | bytes | seconds | MB/s (wall) | MB/s per CPU second |")
print("|---|---|---|---|---|")
print("| pull from loopback (%s MB shards, %s in parallel) | %d | %.2f | %.0f |" % (sys.argv[4], sys.argv[5], pull["bytes"], pull["seconds"], mb / pull["seconds"]) + " - |")
for label, v in (("verify --md5, after dropping the page cache (if root)", ver), ("verify --md5, warm page cache", warm)):
    print("| %s | %d | %.2f | %.0f | %.0f |" % (label, v["bytes"], v["seconds"], v["MB_per_s"], v["bytes"] / 2**20 / max(v["cpu_seconds"], 1e-9)))
print("| verify (sizes only) | %d | %.4f | - | - |" % (sizes["bytes"], sizes["seconds"]))
PY
