#!/usr/bin/env bash
# The README's test command: install + build (scripts/setup.sh), then every CTest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j2 "$@"
