#!/usr/bin/env bash
# Model checking with spin (Debian's package): every model must verify with no error, and each
# deliberately broken variant must be refuted, since a model that cannot fail proves nothing.
# Usage: tests/models/check.sh [WORK_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
status=0

# verify MODEL NAME [-DVARIANT]: prints spin's verdict; returns 0 if it found no error.
verify() {
  local model=$1 name=$2 define=${3:-}
  local dir="$work/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && spin $define -a "$here/$model" >/dev/null &&
     cc -O2 -DSAFETY -DNOFAIR -o pan pan.c 2>/dev/null && ./pan -m100000 > pan.out 2>&1) || true
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out" | head -1)
  local states
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.out" | head -1)
  echo "$name: errors=${errors:-?} states=${states:-?}"
  [ "${errors:-1}" = "0" ]
}

expect_verified() {
  if ! verify "$@"; then
    echo "FAIL: $2 should verify; spin's trail is in $work/$2" >&2
    status=1
  fi
}

expect_refuted() {
  if verify "$@"; then
    echo "FAIL: $2 is broken on purpose, but spin found no error" >&2
    status=1
  fi
}

expect_verified passivation.pml passivation
expect_refuted passivation.pml passivation-broken-no-count-check -DBROKEN_NO_COUNT_CHECK
expect_verified intent_lease.pml intent-lease
expect_refuted intent_lease.pml intent-lease-broken-call-before-intent -DBROKEN_CALL_BEFORE_INTENT
expect_refuted intent_lease.pml intent-lease-broken-key-per-instance -DBROKEN_KEY_PER_INSTANCE
expect_refuted intent_lease.pml intent-lease-broken-blind-intent -DBROKEN_BLIND_INTENT
expect_refuted intent_lease.pml intent-lease-broken-trusted-presumption -DBROKEN_TRUSTED_PRESUMPTION
expect_refuted intent_lease.pml intent-lease-broken-blind-takeover -DBROKEN_BLIND_TAKEOVER
exit $status
