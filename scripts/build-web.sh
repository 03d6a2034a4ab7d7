#!/usr/bin/env bash
# The browser build (docs/web.md): installs what it needs (Debian's emscripten 3.1.6), builds the two C libraries
# the tokenizer needs for wasm from Debian's own source packages (PCRE2 10.42, utf8proc 2.8.0), configures the
# EWGPU_WEB CMake build in build/web-cmake and writes build/web/: everything-webgpu.js (the page module), its
# worker, the wasm, the .d.ts and the demo page. Idempotent: a second run rebuilds only what changed.
#   scripts/build-web.sh            # Release (-O2)
#   EWGPU_WEB_BUILD_TYPE=Debug scripts/build-web.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

need=()
command -v em++ >/dev/null || need+=(emscripten)
command -v node >/dev/null || need+=(nodejs)
dpkg-query -W -f='${Status}' nlohmann-json3-dev 2>/dev/null | grep -q "install ok installed" || need+=(nlohmann-json3-dev)
dpkg-query -W -f='${Status}' dpkg-dev 2>/dev/null | grep -q "install ok installed" || need+=(dpkg-dev)  # apt-get source
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}  # emscripten's JS optimizer finds acorn there (web-build.md)
# Emscripten's system-library cache: a writable folder of ours (Debian's /usr/share/emscripten/cache is the default).
export EM_CACHE=${EM_CACHE:-$ROOT/build/web-deps/em-cache}
if [ ! -d "$EM_CACHE/sysroot" ] && [ -d /usr/share/emscripten/cache/sysroot ]; then
  mkdir -p "$EM_CACHE" && cp -a /usr/share/emscripten/cache/. "$EM_CACHE/"
fi

DEPS=$ROOT/build/web-deps
mkdir -p "$DEPS/src"
# Debian's source packages of the two libraries (the same versions as the native build's -dev packages), through
# a private apt configuration: the system's sources.list is left as it is.
fetch_source() {  # name version
  local name=$1 version=$2
  [ -f "$DEPS/src/${name}_${version}.orig.tar.gz" ] && return
  local apt=$DEPS/apt
  mkdir -p "$apt/lists/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
    > "$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$apt/lists")
  [ -n "$(ls "$apt/lists" 2>/dev/null | grep -v partial)" ] || apt-get "${opts[@]}" update -qq
  (cd "$DEPS/src" && apt-get "${opts[@]}" source --download-only -qq "$name=$version-1" 2>/dev/null)
}
fetch_source pcre2 10.42
fetch_source utf8proc 2.8.0

build_dep() {  # name version cmake-args...
  local name=$1 version=$2; shift 2
  [ -f "$DEPS/install/.$name-$version" ] && return
  rm -rf "$DEPS/src/$name-$version" "$DEPS/build-$name"
  tar -C "$DEPS/src" -xzf "$DEPS/src/${name}_${version}.orig.tar.gz"
  emcmake cmake -S "$DEPS/src/$name-$version" -B "$DEPS/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$DEPS/install" -DBUILD_SHARED_LIBS=OFF "$@" > "$DEPS/configure-$name.log" 2>&1 || { cat "$DEPS/configure-$name.log"; exit 1; }
  cmake --build "$DEPS/build-$name" >/dev/null
  cmake --install "$DEPS/build-$name" >/dev/null
  touch "$DEPS/install/.$name-$version"
}
# PCRE2 without JIT (no machine code in wasm): regex.cpp falls back to pcre2_match, the same matcher.
build_dep pcre2 10.42 -DPCRE2_SUPPORT_JIT=OFF -DPCRE2_SUPPORT_UNICODE=ON -DPCRE2_BUILD_PCRE2GREP=OFF \
  -DPCRE2_BUILD_TESTS=OFF -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF
build_dep utf8proc 2.8.0 -DUTF8PROC_INSTALL=ON -DUTF8PROC_ENABLE_TESTING=OFF

# nlohmann-json is header-only: its own folder, never -I/usr/include (glibc's headers break em++).
mkdir -p "$DEPS/include"
[ -d "$DEPS/include/nlohmann" ] || cp -r /usr/include/nlohmann "$DEPS/include/"

# ccache, where the machine has it, works with em++ as with the native compilers (a rebuild in another checkout is
# then cheap; it is not required).
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
emcmake cmake -S . -B build/web-cmake -G Ninja -DEWGPU_WEB=ON -DEWGPU_WEB_DEPS="$DEPS" \
  -DCMAKE_BUILD_TYPE="${EWGPU_WEB_BUILD_TYPE:-Release}" "${launcher[@]}" > "$DEPS/configure-web.log" 2>&1 || { cat "$DEPS/configure-web.log"; exit 1; }
cmake --build build/web-cmake
ls -l build/web
