#!/usr/bin/env bash
# The benchmark harness (not a test): builds idempay (Release) and runs bench/harness.py,
# which measures idempay next to nginx and RocksDB's db_bench on this machine, in one run,
# and writes bench/results/results.{csv,json,png}. `bench/run.sh --quick` is a smoke run.
# IDEMPAY_BENCH_BINARY=path skips the build and uses that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
binary=${IDEMPAY_BENCH_BINARY:-}
if [ -z "$binary" ]; then
  cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF >/dev/null
  cmake --build build-bench --target idempay idempay-sandbox protocol_bench preload >/dev/null
  binary=build-bench/idempay
fi
python3 bench/harness.py --binary "$binary" "$@"
if [ -x build-bench/bench/protocol_bench ] && [[ " $* " != *" --quick "* ]]; then
  build-bench/bench/protocol_bench --benchmark_min_time=0.2
fi
