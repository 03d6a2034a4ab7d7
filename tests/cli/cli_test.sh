#!/usr/bin/env bash
# The CLI as issue 18 specifies it, end to end: --version and per-command --help; unknown flags, wrong types and
# out-of-range values rejected (exit 2, naming the flag) before anything is loaded; typed errors for missing
# folders and templates outside the vocabulary; Vulkan/Dawn driver warnings hidden unless --verbose; the load
# progress line on a terminal; Ctrl-C (clean stop with timings and exit 130; immediate exit during the load); no
# record and no lock left by a failed pull; `run ID` pulling a catalogue id (and --no-pull refusing); `show`.
#   cli_test.sh EWGPU REPO        (needs python3 for the loopback hub; GPU parts run on SwiftShader)
set -uo pipefail
EWGPU=$1
REPO=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ewgpu-cli-XXXXXX")
HUB_PID=""
cleanup() { [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
export EWGPU_CACHE_DIR="$WORK/cache"
FIXTURE=$REPO/tests/fixtures/qwen3_5_tiny/q4f16_1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval("d"+sys.argv[1]))' "$1"; }

# --- help and version -------------------------------------------------------------------------------------------
out=$("$EWGPU" --version) && [[ $out == "ewgpu "* ]] && ok "--version: $out" || fail "--version printed '$out'"
commands=$("$EWGPU" --help | awk '$1 == "ewgpu" { n = ""; for (i = 2; i <= NF && $i ~ /^[a-z][a-z0-9-]*$/; ++i)
  n = (n == "" ? $i : n " " $i); if (n != "") print n }')
[ "$(echo "$commands" | wc -l)" -ge 19 ] || fail "ewgpu --help lists too few commands: $commands"
while IFS= read -r cmd; do
  # shellcheck disable=SC2086
  help=$(timeout 10 "$EWGPU" $cmd --help 2>&1); rc=$?
  if [ $rc -ne 0 ] || [[ $help != *"Usage: ewgpu $cmd"* ]] || [[ $help != *"--json"* ]]; then
    fail "'$cmd --help' (exit $rc) is not the command's help: ${help:0:200}"
  fi
done <<< "$commands"
ok "--help of $(echo "$commands" | wc -l) commands"
help=$("$EWGPU" run --help)
for flag in "-m,--model" "-p,--prompt" "-n,--max-tokens" "-c,--context" "-t,--temp,--temperature" "-s,--seed" \
            "--top-p" "--top-k" "--steps" "--no-pull" "--activations" "--stop" "--system" "--file"; do
  [[ $help == *"$flag"* ]] || fail "run --help lacks $flag"
done
[[ $help == *"=128"* && $help == *"in [1, 1048576]"* && $help == *"=16"* ]] || fail "run --help lacks defaults/ranges"
# --help after a model is help, not a generation; bench gpu --help does not benchmark.
out=$(timeout 10 "$EWGPU" run "$FIXTURE" "hi" --help 2>&1) && [[ $out == *"Usage: ewgpu run"* ]] || fail "run MODEL --help: $out"
out=$(timeout 10 "$EWGPU" bench gpu --help 2>&1) && [[ $out != *"GB/s"* ]] || fail "bench gpu --help benchmarked"
ok "help texts"

# --- rejected flags: exit 2, the flag named, nothing loaded (each answers at once) ------------------------------
expect_usage() {  # expect_usage NEEDLE ARGS...
  local needle=$1; shift
  local t0 err rc
  t0=$(date +%s%N)
  err=$("$EWGPU" "$@" 2>&1 </dev/null); rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc -ne 2 ] || [[ $err != *"$needle"* ]]; then fail "'$*' exited $rc: $err"; return; fi
  [ $ms -lt 3000 ] || fail "'$*' took $ms ms (validation must come before the load)"
}
expect_usage "--max-token" run "$FIXTURE" hi --max-token 4
expect_usage "--max-tokens: -1 is outside [1, 1048576]" run "$FIXTURE" hi --max-tokens -1
expect_usage "--max-tokens: 99999999 is outside" run "$FIXTURE" hi -n 99999999
expect_usage "--max-tokens: 'abc' is not an integer" run "$FIXTURE" hi --max-tokens abc
expect_usage "--context: -1 is outside" run "$FIXTURE" hi --context -1
expect_usage "--top-p: 2 is outside" run "$FIXTURE" hi --top-p 2
expect_usage "--temp: 'hot' is not a number" run "$FIXTURE" hi -t hot
expect_usage "--steps: 0 is outside [1, 32]" run "$FIXTURE" hi --steps 0
expect_usage "--adapter" run "$FIXTURE" hi --adapter quantum
expect_usage "--activations" run "$FIXTURE" hi --activations int4
expect_usage "the prompt is empty" run "$FIXTURE" ""
expect_usage "run needs a prompt" run "$FIXTURE"            # stdin is /dev/null: empty
expect_usage "give the prompt once" run "$FIXTURE" hi -p there
expect_usage "--parallel: 0 is outside" pull some-id --parallel 0
expect_usage "--limit" recommend --limit x
expect_usage "--tokens" bench decode "$FIXTURE" --tokens 0
expect_usage "--steps: 64 is outside" bench decode "$FIXTURE" --steps 1,64
expect_usage "--quant" make-tiny "$WORK/x" --tokenizer t.json --quant q9
expect_usage "--bogus" inspect "$FIXTURE" --bogus
expect_usage "not expected" inspect "$FIXTURE" extra-positional
expect_usage "unknown command 'frobnicate'" frobnicate
err=$("$EWGPU" run "$FIXTURE" hi -n 0 --json 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [ "$(echo "$err" | field '["error"]["code"]')" = BAD_REQUEST ] || fail "--json usage error: $rc $err"
ok "rejected flags"

# --- typed errors before any GPU work -----------------------------------------------------------------------------
err=$("$EWGPU" run /no/such/dir hi 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $err == *"INVALID_MODEL_FOLDER: no such model folder: /no/such/dir"* ]] || fail "missing folder: $err"
cp -r "$FIXTURE" "$WORK/bad-template"
python3 - "$WORK/bad-template/mlc-chat-config.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["conv_template"]["system_prefix_token_ids"] = [128000]
json.dump(j, open(sys.argv[1], "w"))
PY
err=$("$EWGPU" run "$WORK/bad-template" hi --chat 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $err == *'"problem":"outside_vocabulary"'* && $err == *"system_prefix_token_ids"* ]] ||
  fail "template outside the vocabulary: $err"
python3 - "$WORK/bad-template/mlc-chat-config.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); j["conv_template"]["system_prefix_token_ids"] = []; j["context_window_size"] = "big"
json.dump(j, open(sys.argv[1], "w"))
PY
err=$("$EWGPU" inspect "$WORK/bad-template" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $err == *'"field":"context_window_size"'* && $err == *'"problem":"wrong_type"'* ]] ||
  fail "top-level context_window_size \"big\": $err"
ok "typed errors"

# --- driver warnings only with --verbose -------------------------------------------------------------------------
"$EWGPU" probe >/dev/null 2>"$WORK/quiet.err" || fail "probe failed: $(cat "$WORK/quiet.err")"
"$EWGPU" probe --verbose >/dev/null 2>"$WORK/verbose.err" || fail "probe --verbose failed"
[ ! -s "$WORK/quiet.err" ] || fail "probe printed on stderr without --verbose: $(head -3 "$WORK/quiet.err")"
if [ -s "$WORK/verbose.err" ]; then ok "driver warnings hidden ($(wc -l < "$WORK/verbose.err") lines with --verbose)";
else ok "no driver warnings on this machine, with or without --verbose"; fi

# --- generation (each load is ~30 s on SwiftShader, so three in all) ------------------------------------------------
# The llama fixture with --chat (its template's start token used to lie outside its vocabulary), on a terminal:
# the load progress line is drawn on stderr.
LLAMA=$REPO/tests/fixtures/llama_tiny/q4f16_1
"$EWGPU" inspect "$LLAMA" >/dev/null || fail "inspect of the llama fixture"
script -qfec "$EWGPU run $LLAMA Hello --chat -n 4" /dev/null > "$WORK/tty.out" 2>&1 || fail "llama --chat on a terminal"
grep -q "generated 4 (length)" "$WORK/tty.out" || fail "llama --chat: $(tr '\r' '\n' < "$WORK/tty.out" | tail -5)"
grep -q "loading $LLAMA: parse [0-9]* ms | upload .* MB/s | pipelines [0-9]*/[1-9]" "$WORK/tty.out" ||
  fail "no load progress line on a terminal: $(tr '\r' '\n' < "$WORK/tty.out" | head -5)"
# The last redraw counts every pipeline the forward asked for as ready (n/n).
last=$(tr '\r' '\n' < "$WORK/tty.out" | grep "pipelines" | tail -1 | sed -n 's/.*pipelines \([0-9]*\)\/\([0-9]*\).*/\1 \2/p')
read -r ready total <<<"$last"
[ -n "$total" ] && [ "$ready" = "$total" ] || fail "the progress line's last pipelines count is not n/n: '$last'"
ok "llama --chat, progress line on a terminal (pipelines $ready/$total)"

# Ctrl-C during generation: text so far, a newline, the timings, "interrupted", exit 130 (and no progress line on a
# pipe).
"$EWGPU" run "$FIXTURE" Hello -n 1000 --steps 1 -t 1 >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
for _ in $(seq 3000); do [ -s "$WORK/int.out" ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && grep -q "interrupted" "$WORK/int.err" && grep -q "generated [0-9]* (abort)" "$WORK/int.err" ||
  fail "Ctrl-C during generation: exit $rc, stderr: $(cat "$WORK/int.err")"
! grep -q "loading" "$WORK/int.err" || fail "progress line drawn on a pipe"
# Ctrl-C during the load: exit 130 at once.
"$EWGPU" run "$FIXTURE" Hello -n 4 >/dev/null 2>"$WORK/int2.err" &
pid=$!
sleep 0.5; t0=$(date +%s); kill -INT $pid; wait $pid; rc=$?
[ $rc -eq 130 ] && [ $(( $(date +%s) - t0 )) -le 2 ] || fail "Ctrl-C during the load: exit $rc"
ok "Ctrl-C"

# --- no ghost records after a failed pull -----------------------------------------------------------------------
mkdir -p "$WORK/hub"
exec 3< <(python3 "$REPO/tests/store/fake_hub.py" --root "$WORK/hub")
HUB_PID=$!
read -r PORT <&3
no_ghosts() {  # no_ghosts WHAT
  local n
  n=$("$EWGPU" list --json | field '["models"].__len__()')
  [ "$n" = 0 ] || fail "$1 left $n record(s): $("$EWGPU" list)"
  [ -z "$(ls -A "$EWGPU_CACHE_DIR/locks" 2>/dev/null)" ] || fail "$1 left lock files: $(ls "$EWGPU_CACHE_DIR/locks")"
  [ -z "$(ls -A "$EWGPU_CACHE_DIR/models" 2>/dev/null)" ] || fail "$1 left model folders: $(ls "$EWGPU_CACHE_DIR/models")"
}
"$EWGPU" pull "http://127.0.0.1:$PORT/org/missing-MLC" --json >/dev/null 2>&1 && fail "pull of a 404 succeeded"
no_ghosts "a 404"
"$EWGPU" pull "http://127.0.0.1:1/org/x-MLC" --json >/dev/null 2>&1 && fail "pull from a closed port succeeded"
no_ghosts "a refused connection"
"$EWGPU" pull no-such-model --json >/dev/null 2>&1 && fail "pull of a bad id succeeded"
no_ghosts "a bad id"
export EWGPU_HF_ENDPOINT="http://127.0.0.1:$PORT"
ID=Qwen3-0.6B-q4f16_1-MLC   # a catalogue id; the loopback hub serves the tiny fixture under its name
"$EWGPU" pull $ID --json >/dev/null 2>&1 && fail "pull of a catalogue id the hub lacks succeeded"
no_ghosts "a catalogue 404"
ok "no ghost records"

# --- run ID pulls a catalogue id that is not cached; --no-pull refuses ---------------------------------------------
mkdir -p "$WORK/hub/mlc-ai/$ID"
cp "$FIXTURE"/mlc-chat-config.json "$FIXTURE"/tensor-cache.json "$FIXTURE"/tokenizer.json "$FIXTURE"/params_shard_*.bin \
  "$WORK/hub/mlc-ai/$ID/"
err=$("$EWGPU" run $ID Hello -n 2 --no-pull 2>&1); rc=$?
[ $rc -eq 1 ] && [[ $err == *CACHE_INCOMPLETE* ]] || fail "run --no-pull: exit $rc: $err"
no_ghosts "run --no-pull"
out=$("$EWGPU" run $ID Hello -n 2 --json 2>/dev/null); rc=$?
[ $rc -eq 0 ] && [ "$(echo "$out" | field '["usage"]["completion_tokens"]')" = 2 ] || fail "run of an uncached id: $out"
[ "$("$EWGPU" list --json | field '["models"][0]["state"]')" = cached ] || fail "run did not leave the pulled model cached"

# --- show -------------------------------------------------------------------------------------------------------------
out=$("$EWGPU" show $ID --json) || fail "show $ID"
[ "$(echo "$out" | field '["source"]')" = prebuilt ] && [ "$(echo "$out" | field '["state"]')" = cached ] &&
  [ "$(echo "$out" | field '["config"]["architecture"]')" = qwen3_5 ] &&
  [ "$(echo "$out" | field '["config"]["quantization"]')" = q4f16_1 ] &&
  [ "$(echo "$out" | field '["template"]["name"]')" = qwen3_5_nothink ] &&
  [ "$(echo "$out" | field '["bytes_on_disk"]')" -gt 100000 ] || fail "show --json: $out"
out=$("$EWGPU" show "$FIXTURE") || fail "show FOLDER"
for word in Model architecture parameters "context length" quantization Template Store source state; do
  [[ $out == *"$word"* ]] || fail "show FOLDER lacks '$word': $out"
done
out=$("$EWGPU" show Llama-3.2-1B-Instruct-q4f16_1-MLC --json) || fail "show of a catalogue id"
[ "$(echo "$out" | field '["state"]')" = absent ] && [ "$(echo "$out" | field '["catalogue"]["arch"]')" = llama ] ||
  fail "show of an uncached catalogue id: $out"
err=$("$EWGPU" show /no/such/dir 2>&1); [[ $err == *"no such model folder"* ]] || fail "show of a missing folder: $err"
ok "run ID pull, show"

# --- bench prefill --profile: the chunk's GPU time kernel by kernel (the qwen3_5 tiny model: 3 GDN layers, each
# with its conv and state shift, and 1 attention layer) -----------------------------------------------------------
out=$(timeout 120 "$EWGPU" bench prefill "$FIXTURE" --lengths 12,20 --profile --profile-repeat 1 2>&1) ||
  fail "bench prefill --profile exited $?: ${out:0:400}"
[[ $out == *"profile of the last prefill chunk of 20 tokens (20 tokens at positions 0..19, the layers)"* ]] &&
  echo "$out" | grep -Eq '^gdn_conv +6 ' && echo "$out" | grep -Eq '^qk_prepare +1 ' &&
  echo "$out" | grep -Eq '^ +0 embed ' || fail "bench prefill --profile: ${out:0:1500}"
ok "bench prefill --profile"

[ $failures -eq 0 ] && echo "cli: all ok" || { echo "cli: $failures failure(s)"; exit 1; }
