#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds everything with AddressSanitizer and
# UndefinedBehaviorSanitizer, then runs the unit tests, the models and the integration tests
# (the real binaries on loopback, several test processes at once) through ctest. Each phase's
# duration is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phases.sh
trap 'print_phase_durations "scripts/test.sh, by phase"' EXIT
phase "install what is missing" scripts/install-deps.sh test
build_dir=${IDEMPAY_TEST_BUILD_DIR:-build-asan}
# A unity build (each library's sources compiled a few at a time in one unit) takes about 40%
# less time from scratch; the fuzz build (scripts/fuzz.sh) compiles the libraries one file at a
# time, so a missing include still shows. Clang: it builds this in about 55% of GCC's time
# (Beast's templates at -O0), and its UBSan also checks float-to-integer conversions, which
# GCC's leaves out. The packages (scripts/package.sh) are built by GCC: the two compilers see it.
phase "configure and build (ASan, UBSan)" bash -c "cmake -S . -B '$build_dir' -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++ -DIDEMPAY_SANITIZE=address,undefined -DCMAKE_UNITY_BUILD=ON >/dev/null \
  && cmake --build '$build_dir' -j $(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
# A throwaway PostgreSQL cluster on a free port for the PostgreSQL store's tests, unless the
# caller names a server of its own.
if [[ -z "${IDEMPAY_TEST_PG_URI:-}" ]]; then
  pg_dir=$(mktemp -d /tmp/idempay-pg.XXXXXX)
  chmod 755 "$pg_dir"
  IDEMPAY_TEST_PG_URI=$(scripts/pg-local.sh start "$pg_dir")
  export IDEMPAY_TEST_PG_URI
  trap 'scripts/pg-local.sh stop "$pg_dir" || true; rm -rf "$pg_dir"; print_phase_durations "scripts/test.sh, by phase"' EXIT
fi
phase "unit tests and models (ctest -L 'unit|models')" bash -c "cd '$build_dir' && ctest --output-on-failure -j $(nproc) -L 'unit|models' $*"
phase "integration tests (ctest -L integration)" bash -c "cd '$build_dir' && ctest --output-on-failure -L integration $*"
