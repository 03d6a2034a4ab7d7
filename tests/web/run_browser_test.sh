#!/usr/bin/env bash
# CTest's web_browser: builds the browser bundle (scripts/build-web.sh; a no-op when nothing changed), then runs
# tests/web/browser_test.mjs against it. Exit 77 (skip) when chromium or emscripten is missing.
#   tests/web/run_browser_test.sh build/ewgpu build/web-test
set -euo pipefail
cd "$(dirname "$0")/../.."
ewgpu=${1:-build/ewgpu}
out=${2:-build/web-test}
command -v chromium >/dev/null || { echo "SKIP: no chromium"; exit 77; }
command -v em++ >/dev/null || { echo "SKIP: no emscripten (em++)"; exit 77; }
scripts/build-web.sh >/dev/null
# Native pipelines compiled once are reused across runs (Dawn's blob cache): the native reference run is fast then.
export EWGPU_PIPELINE_CACHE_DIR=${EWGPU_PIPELINE_CACHE_DIR:-$PWD/build/pipeline-cache}
exec node tests/web/browser_test.mjs --web build/web --ewgpu "$ewgpu" --fixture tests/fixtures/qwen3_tiny/q4f16_1 \
  --out "$out" --profile "$out/chromium-profile"
