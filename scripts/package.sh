#!/usr/bin/env bash
# Builds idempay and idempay-sandbox (Release) and their Debian packages with CPack:
# build-release/idempay-sandbox_*.deb and build-release/idempay_*.deb, their paths printed in that
# order (and nothing else on stdout).
# IDEMPAY_PACKAGE_BUILD_DIR=dir uses another build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${IDEMPAY_PACKAGE_BUILD_DIR:-build-release}
# The build's progress goes to stderr: stdout is the packages' paths, for the caller.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF -DIDEMPAY_BUILD_BENCH=OFF \
  -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$build" --target idempay idempay-sandbox >&2
(cd "$build" && cpack -G DEB >/dev/null)
ls "$PWD/$build"/idempay-sandbox_*.deb
ls "$PWD/$build"/idempay_*.deb
