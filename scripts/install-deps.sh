#!/usr/bin/env bash
# Installs what idempay needs to build, test and benchmark, from Debian's archive only.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config libpq-dev postgresql postgresql-client
  libcaf-dev librocksdb-dev libsimdjson-dev libboost-dev libssl-dev libexpected-dev
  prometheus-cpp-dev prometheus libcli11-dev libspdlog-dev libgtest-dev libgmock-dev libqrencode-dev libpng-dev libbenchmark-dev libjemalloc-dev gnuplot-nox
  python3 python3-pytest python3-jsonschema
  wrk nginx-light haproxy procps zbar-tools rocksdb-tools openssl spin clang libclang-rt-14-dev
  chromium chromium-driver python3-selenium fonts-dejavu-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
