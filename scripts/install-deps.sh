#!/usr/bin/env bash
# Installs what idempay needs, from Debian's archive (and, for the tests' Prism, the npm
# registry), for one purpose:
#   scripts/install-deps.sh build   to build and run the connector (scripts/run.sh)
#   scripts/install-deps.sh test    that, and the test and benchmark tools (scripts/test.sh,
#                                   bench/run.sh, .ci/run): PostgreSQL, Patroni and etcd (the
#                                   failover test), nginx, haproxy, wrk,
#                                   spin, clang for the fuzzers, Chromium for the console test,
#                                   python3-jwcrypto (the receipts' independent verifier),
#                                   Stoplight Prism (npm) for the Pix tests
# --print lists the profile's packages instead of installing them.
set -euo pipefail
profile=${1:-test}
build=(
  cmake ninja-build g++ pkg-config libpq-dev
  libcaf-dev librocksdb-dev libsimdjson-dev libboost-dev libssl-dev libexpected-dev
  prometheus-cpp-dev libcli11-dev libspdlog-dev libqrencode-dev libpng-dev libjemalloc-dev
  curl python3 openssl
)
test=(
  postgresql postgresql-client patroni python3-etcd etcd-server etcd-client libgtest-dev libgmock-dev libbenchmark-dev gnuplot-nox prometheus
  python3-pytest python3-pytest-xdist python3-jsonschema python3-jwcrypto
  wrk nginx-light haproxy procps zbar-tools rocksdb-tools spin clang libclang-rt-14-dev
  chromium chromium-driver python3-selenium fonts-dejavu-core
)
case "$profile" in
  build) packages=("${build[@]}") ;;
  test) packages=("${build[@]}" "${test[@]}") ;;
  *) echo "usage: $0 build|test [--print]" >&2; exit 2 ;;
esac
if [[ "${2:-}" == "--print" ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm run Stoplight Prism (the Pix tests' validating proxy): Debian's, unless the
# machine has its own.
if [[ "$profile" == test ]] && ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Stoplight Prism and OpenTelemetry's OTLP transformer (the tests' span decoder) at the versions
# tests/tools/package-lock.json pins, from the npm registry.
tools="$(cd "$(dirname "$0")/.." && pwd)/tests/tools"
if [[ "$profile" == test && ( ! -x "$tools/node_modules/.bin/prism" ||
      ! -d "$tools/node_modules/@opentelemetry/otlp-transformer" ) ]]; then
  echo "installing Stoplight Prism and the OTLP decoder into tests/tools"
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error)
fi
