#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and UndefinedBehaviorSanitizer,
# replays the regression inputs kept in fuzz/regressions/<target>/, then fuzzes each target for
# SECONDS (default 20) from its seed corpus (fuzz/corpus/<target>/, copied: new inputs stay out
# of the repository), one target per core at a time. A crash fails the script; its input is
# left in build-fuzz/crashes/. `scripts/fuzz.sh --build-only` builds the targets and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=false
if [[ ${1:-} == --build-only ]]; then
  build_only=true
  shift
fi
seconds=${1:-20}
build=${IDEMPAY_FUZZ_BUILD_DIR:-build-fuzz}
targets=(fuzz_ppp_request fuzz_webhook fuzz_records fuzz_url fuzz_proxy_header fuzz_config fuzz_operator_request
  fuzz_adyen_notification)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DIDEMPAY_FUZZ=ON -DIDEMPAY_BUILD_TESTS=OFF -DIDEMPAY_BUILD_BENCH=OFF \
  -DIDEMPAY_SANITIZE=address,undefined,fuzzer-no-link >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
if $build_only; then
  exit 0
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/crashes"
# One target: its regression inputs replayed, then fuzzed from a copy of its seed corpus.
fuzz_one() {
  local t=$1 work
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    "$build/fuzz/$t" fuzz/regressions/$t/* >/dev/null 2>&1 || { echo "$t: a regression input fails again"; return 1; }
  fi
  work=$(mktemp -d)
  cp fuzz/corpus/$t/* "$work"/
  if ! "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/crashes/$t-" "$work" >"$build/$t.log" 2>&1; then
    tail -n 40 "$build/$t.log"
    echo "$t: crashed; the input is in $build/crashes/"
    return 1
  fi
  echo "$t: $(grep -oP 'stat::number_of_executed_units:\s*\K\d+' "$build/$t.log") runs in ${seconds} s, no crash"
  rm -rf "$work"
}
export -f fuzz_one
export build seconds
# libFuzzer runs a target on one thread: one target per core at a time.
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'fuzz_one {}'
