#!/usr/bin/env bash
# Builds idempay and idempay-sandbox (Release) and their Debian packages with CPack:
# build-release/idempay_*.deb (printed last) and build-release/idempay-sandbox_*.deb.
# IDEMPAY_PACKAGE_BUILD_DIR=dir uses another build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IDEMPAY_PACKAGE_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF -DIDEMPAY_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target idempay idempay-sandbox
(cd "$build" && cpack -G DEB >/dev/null)
ls "$PWD/$build"/idempay-sandbox_*.deb
ls "$PWD/$build"/idempay_*.deb
