#!/usr/bin/env bash
# The GPU-machine run behind the figures in docs/measurements/ (see docs/benchmarks.md). Expects a static build in
# build-h200/ (cmake -DEWGPU_STATIC_LIBSTDCXX=ON, Release) with its non-glibc libraries in build-h200/lib, the Vulkan
# loader debs in .gl/, and writes results under $OUT (or ./h200-out). Random-weight folders of real model shapes
# are generated on the machine (nothing downloads).
set -uo pipefail
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
. bench/h200_env.sh
B=build-h200
TOK=tests/fixtures/qwen3_tiny/q4f16_1/tokenizer.json
$B/ewgpu probe | tee "$OUT/probe.txt"
[ -n "${SKIP_TESTS:-}" ] || $B/tests/runtime/fixture_test 2>&1 | grep -E "fixture \]|PASSED|FAILED" | tee "$OUT/fixture_test.txt"
# FORWARD_TEST=1: the GPU-vs-CPU-reference forward tests and the generator tests too (carry
# build-h200/tests/runtime/forward_test and generator_test), and the GEMV and sampling kernel tests where carried
# (build-h200/tests/kernels/gemv_test, sample_test: they run the GPU's own defaults, e.g. int8 x̂ and 1024 sampling
# threads, which SwiftShader does not).
if [ -n "${FORWARD_TEST:-}" ]; then
  # FORWARD_FILTER: a gtest filter for all of them (e.g. '*Int8*').
  for t in runtime/forward_test runtime/generator_test runtime/batch_test kernels/gemv_test kernels/sample_test \
           kernels/gemm_test runtime/fixture_test; do
    [ -x "$B/tests/$t" ] || continue
    $B/tests/$t --gtest_filter="${FORWARD_FILTER:-*}" 2>&1 |
      grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|\[ (q8|sample|logits|fixture) \]" |
      tee "$OUT/$(basename $t).txt"
  done
fi
$B/ewgpu run tests/fixtures/qwen3_5_tiny/q4f16_1 "Hello" --chat --max-tokens 16 --temperature 0 2>&1 | tail -2 | tee "$OUT/run_tiny.txt"
for shape in ${SHAPES:-llama-3.2-1b qwen3-0.6b qwen2.5-1.5b qwen3.5-2b}; do
  $B/ewgpu make-tiny /tmp/m-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
  [ -n "${SKIP_DECODE:-}" ] ||
    $B/ewgpu bench decode /tmp/m-$shape --steps ${STEPS:-1,4,16,32} --tokens 256 ${DECODE_FLAGS:-} 2>&1 | tee "$OUT/decode-$shape.txt"
  # VARIANTS="A=1,B=2 C=3" repeats the decode bench once per space-separated set of comma-separated environment
  # assignments (GEMV knobs EWGPU_GEMV_*, Dawn toggles EWGPU_DAWN_TOGGLES=a+b with + between toggles).
  for v in ${VARIANTS:-}; do
    echo "== variant $v" | tee -a "$OUT/decode-$shape.txt"
    env $(echo "$v" | tr ',' ' ' | tr '+' ',') $B/ewgpu bench decode /tmp/m-$shape --steps ${STEPS:-1,4,16,32} --tokens 256 \
      ${DECODE_FLAGS:-} 2>&1 | tee -a "$OUT/decode-$shape.txt"
  done
  # CONCURRENT=1: the engine under concurrent callers (aggregate tok/s per stream count, interactive TTFT under load).
  # CONCURRENT_FLAGS adds flags, e.g. "--fp32-tflops 65.4 --int8-tops 120" for the arithmetic ceiling.
  # CONCURRENT_VARIANTS="A=1 A=0,B=4" repeats it once per set of comma-separated environment assignments (A/B runs of
  # the batched kernels' knobs, e.g. EWGPU_GEMMQ=0 / 1, EWGPU_GEMMQ_KS) into the same file.
  if [ -n "${CONCURRENT:-}" ]; then
    for v in ${CONCURRENT_VARIANTS:-default}; do
      echo "== $shape ${v}" | tee -a "$OUT/concurrent-$shape.txt"
      env $( [ "$v" = default ] || echo "$v" | tr ',' ' ') $B/ewgpu bench concurrent /tmp/m-$shape \
        --streams ${CONCURRENT_STREAMS:-1,2,4,8} --tokens ${CONCURRENT_TOKENS:-128} ${CONCURRENT_FLAGS:-} 2>&1 |
        tee -a "$OUT/concurrent-$shape.txt"
    done
  fi
  # LOAD=1: the load's stages (issue 15, item 4: <= 1 s per GB) with the folder in the page cache: a first load with
  # empty pipeline caches (ours and the NVIDIA driver's), then warm ones, the upload through a host slice
  # (EWGPU_UPLOAD_COPY=1, the path before the read-ahead) and without the read-ahead thread, and the default again.
  if [ -n "${LOAD:-}" ]; then
    f="$OUT/load-$shape.txt"; cache=$(mktemp -d)
    cat /tmp/m-$shape/* > /dev/null
    for v in "cold|" "warm|" "copy|EWGPU_UPLOAD_COPY=1" "no-read-ahead|EWGPU_UPLOAD_READ_AHEAD=0" "warm-again|"; do
      IFS='|' read -r name envs <<< "$v"
      env XDG_CACHE_HOME=$cache __GL_SHADER_DISK_CACHE_PATH=$cache $envs $B/ewgpu run /tmp/m-$shape "Hi" --max-tokens 1 \
        --json 2>/dev/null | python3 -c "
import json, os, sys
j = json.load(sys.stdin)['timings']
gb = sum(os.path.getsize(os.path.join('/tmp/m-$shape', n)) for n in os.listdir('/tmp/m-$shape')) / 1e9
st = ' '.join(f'{k} {v:.1f}' for k, v in sorted(j['load_ms_by_stage'].items()))
print(f'$name: load {j[\"load_ms\"]:.1f} ms, {gb:.3f} GB, {j[\"load_ms\"] / 1000 / gb:.2f} s/GB | {st}')" | tee -a "$f"
    done
    rm -rf "$cache"
  fi
  # PREFILL_VARIANTS="EWGPU_PREFILL_Q8=0 EWGPU_PREFILL_Q8=1" repeats the prefill bench once per set of comma-separated
  # environment assignments (issue 15, item 1: f32 GEMM against the int8 path) into the same file, at PREFILL_LENGTHS.
  # PREFILL_FLAGS="--profile" adds the last length's last chunk kernel by kernel.
  if [ -z "${SKIP_PREFILL:-}" ]; then
    for v in ${PREFILL_VARIANTS:-default}; do
      echo "== $shape ${v}" | tee -a "$OUT/prefill-$shape.txt"
      env $( [ "$v" = default ] || echo "$v" | tr ',' ' ') $B/ewgpu bench prefill /tmp/m-$shape \
        --lengths ${PREFILL_LENGTHS:-128,512} ${PREFILL_FLAGS:-} 2>&1 | tee -a "$OUT/prefill-$shape.txt"
    done
  fi
  # The CLI end to end on the real shape (random weights, so the text is noise; the timings line is the point).
  [ -n "${SKIP_RUN:-}" ] || $B/ewgpu run /tmp/m-$shape "Write a haiku about GPUs." --chat --max-tokens 64 2>&1 |
    tail -c 2000 | tee "$OUT/run-$shape.txt"
  rm -rf /tmp/m-$shape
done
# SAMPLED_AB=1: sampled against greedy decode per shape in one run (issue 15, item 3: sampled >= 0.9x greedy), at the
# seed model card's temperature 0.6 / top-p 0.95 and at 0.7 / 0.8 / top-k 20, each with the split sampler and with
# EWGPU_SAMPLE_SPLIT=0 (one workgroup per row), greedy again at the end for drift. SAMPLED_SHAPES picks the shapes.
if [ -n "${SAMPLED_AB:-}" ]; then
  for shape in ${SAMPLED_SHAPES:-llama-3.2-1b qwen3.5-2b}; do
    $B/ewgpu make-tiny /tmp/s-$shape --shape $shape --quant q4f16_1 --tokenizer $TOK > /dev/null || continue
    f="$OUT/sampled-$shape.txt"
    for v in "greedy|-t 0|" "p95|--temperature 0.6 --top-p 0.95|" "p95-unsplit|--temperature 0.6 --top-p 0.95|EWGPU_SAMPLE_SPLIT=0" \
             "k20|--temperature 0.7 --top-p 0.8 --top-k 20|" "k20-unsplit|--temperature 0.7 --top-p 0.8 --top-k 20|EWGPU_SAMPLE_SPLIT=0" \
             "greedy-again|-t 0|"; do
      IFS='|' read -r name flags envs <<< "$v"
      echo "== $name: $flags ${envs:-}" | tee -a "$f"
      env $envs $B/ewgpu bench decode /tmp/s-$shape --steps ${STEPS:-4} --tokens 256 $flags 2>&1 | tee -a "$f"
    done
    rm -rf /tmp/s-$shape
  done
fi
# SAMPLE_BENCH=1: the sampling kernel's cost per step at V = 151936 (carry build-h200/tests/kernels/sample_test), at
# the defaults and once per VARIANTS set.
if [ -n "${SAMPLE_BENCH:-}" ]; then
  for v in "" ${VARIANTS:-}; do
    echo "== variant ${v:-default}" | tee -a "$OUT/sample_bench.txt"
    env $(echo "$v" | tr ',' ' ') $B/tests/kernels/sample_test --gtest_filter=SampleKernel.ReportsDispatchCost 2>&1 |
      grep "sample \]" | tee -a "$OUT/sample_bench.txt"
  done
fi
if [ -n "${KERNEL_BENCH:-}" ]; then
  # GEMM_BENCH=full / int8 picks gemm_test's sweep (int8: the f32 GEMM against the int8 path's one and two digits).
  EWGPU_GEMM_BENCH=${GEMM_BENCH:-1} $B/tests/kernels/gemm_test --gtest_filter='GemmBench.*' 2>&1 | grep -E "^gemm|adapter" |
    tee "$OUT/gemm_bench.txt"
  $B/tests/kernels/gdn_bench --tokens 64,512 2>&1 | tail -30 | tee "$OUT/gdn_bench.txt"
fi
