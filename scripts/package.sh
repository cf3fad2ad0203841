#!/usr/bin/env bash
# Builds idempay (Release) and its Debian package with CPack: build-release/idempay_*.deb.
# IDEMPAY_PACKAGE_BUILD_DIR=dir uses another build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IDEMPAY_PACKAGE_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF -DIDEMPAY_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target idempay
(cd "$build" && cpack -G DEB >/dev/null)
ls "$PWD/$build"/idempay_*.deb
