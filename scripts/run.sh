#!/usr/bin/env bash
# Quick start: install what is missing, build (Release), start `idempay serve` with the
# embedded defaults (127.0.0.1:8080, RocksDB under ./data, in-process acquirer stub).
# Extra arguments go to `idempay serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF -DIDEMPAY_BUILD_BENCH=OFF >/dev/null
cmake --build build --target idempay
exec build/idempay serve "$@"
