#!/usr/bin/env bash
# README check: every command line shown in README.md's fenced code blocks that starts with `ewgpu ` or
# `build/ewgpu ` (after an optional `$ ` prompt and VAR=value assignments) must name a subcommand that
# `ewgpu --help` lists, and every flag it uses must appear in that subcommand's `--help`, so the README cannot
# show a command or a flag that does not exist.
#   tests/docs/readme_test.sh PATH/TO/ewgpu PATH/TO/README.md
set -euo pipefail
EWGPU=${1:?usage: readme_test.sh EWGPU README}
README=${2:?usage: readme_test.sh EWGPU README}

help=$("$EWGPU" --help) || { echo "FAIL: '$EWGPU --help' exited non-zero"; exit 1; }

# Subcommand names from the usage lines: "  ewgpu bench decode MODEL [...]" -> "bench decode". A name is the run of
# lowercase words after "ewgpu"; arguments start with an uppercase placeholder, '[' or '-'.
names=$(printf '%s\n' "$help" | awk '$1 == "ewgpu" {
  n = ""; for (i = 2; i <= NF && $i ~ /^[a-z][a-z0-9-]*$/; ++i) n = (n == "" ? $i : n " " $i);
  if (n != "") print n }')
[ -n "$names" ] || { echo "FAIL: no commands found in '$EWGPU --help'"; exit 1; }

# Command lines inside ``` fences.
lines=$(awk '/^[[:space:]]*```/ { inside = !inside; next }
  inside {
    s = $0; sub(/^[[:space:]]+/, "", s); sub(/^\$[[:space:]]+/, "", s)
    while (s ~ /^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*[[:space:]]+/) sub(/^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*[[:space:]]+/, "", s)
    if (s ~ /^(build\/)?ewgpu[[:space:]]/) print NR ": " s
  }' "$README")

checked=0 failed=0 flags=0
declare -A helps
while IFS= read -r entry; do
  [ -n "$entry" ] || continue
  lineno=${entry%%: *}
  cmd=${entry#*: }
  cmd=${cmd%%#*}                       # drop a trailing comment
  read -r -a words <<< "$cmd"
  args=("${words[@]:1}")               # the words after ewgpu / build/ewgpu
  match=""
  # Longest match first, as main.cpp dispatches ("bench gpu" before "bench").
  while IFS= read -r name; do
    read -r -a nw <<< "$name"
    [ ${#nw[@]} -le ${#args[@]} ] || continue
    if [ "${args[*]:0:${#nw[@]}}" = "$name" ] && [ ${#name} -gt ${#match} ]; then match=$name; fi
  done <<< "$names"
  checked=$((checked + 1))
  if [ -z "$match" ]; then
    echo "FAIL: $(basename "$README"):$lineno: '${args[*]:0:2}' is not an ewgpu command: $cmd"
    failed=$((failed + 1))
    continue
  fi
  if [ -z "${helps[$match]+x}" ]; then
    # shellcheck disable=SC2086
    helps[$match]=$("$EWGPU" $match --help) || { echo "FAIL: 'ewgpu $match --help' exited non-zero"; failed=$((failed + 1)); }
  fi
  for w in "${args[@]}"; do
    [[ $w == -* ]] || continue
    flag=${w%%=*}
    flags=$((flags + 1))
    # The flag as the help lists it: "--max-tokens", or inside "-n,--max-tokens".
    if ! grep -Eq -- "(^|[ ,])${flag}([ ,=]|$)" <<< "${helps[$match]}" && [ "$flag" != --verbose ]; then
      echo "FAIL: $(basename "$README"):$lineno: 'ewgpu $match --help' does not list $flag: $cmd"
      failed=$((failed + 1))
    fi
  done
done <<< "$lines"

if [ "$checked" -eq 0 ]; then
  echo "FAIL: no ewgpu command lines found in $README"
  exit 1
fi
echo "$checked README command lines ($flags flags) checked against $(printf '%s\n' "$names" | wc -l) commands, $failed unknown"
[ "$failed" -eq 0 ]
