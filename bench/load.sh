#!/usr/bin/env bash
# Load benchmark (not a test): builds idempay (Release), starts it on a free loopback port with
# a fresh RocksDB data directory (synced writes), and drives it with wrk:
#   manifest  GET /manifest: the HTTP stack alone, the ceiling of this machine in this run
#   distinct  Create Payment, a new paymentId per request (intent + result = 2 synced writes)
#   replay    Create Payment replays of one paymentId (answered from the stored response)
# Usage: bench/load.sh [-d SECONDS] [-c CONNECTIONS] [-t WRK_THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=10 connections=32 threads=1
while getopts "d:c:t:" opt; do
  case $opt in
    d) duration=$OPTARG ;; c) connections=$OPTARG ;; t) threads=$OPTARG ;;
    *) echo "usage: $0 [-d seconds] [-c connections] [-t threads]" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh
cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DIDEMPAY_BUILD_TESTS=OFF >/dev/null
cmake --build build-bench --target idempay >/dev/null

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
export IDEMPAY_APP_KEY=bench IDEMPAY_APP_TOKEN=bench-token
printf '{"merchants":[{"name":"bench","appKey":"%s","appToken":"%s"}]}' \
  "$IDEMPAY_APP_KEY" "$IDEMPAY_APP_TOKEN" > "$work/credentials.json"
build-bench/idempay serve --listen 127.0.0.1:0 --data-dir "$work/data" \
  --credentials "$work/credentials.json" 2>"$work/server.log" &
server=$!
for _ in $(seq 100); do
  port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$work/server.log" | grep -o '[0-9]*$' || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "${port:-}" ] || { cat "$work/server.log" >&2; exit 1; }
url="http://127.0.0.1:$port"

run() {  # name, wrk arguments...
  local name=$1; shift
  local out
  out=$(wrk -t "$threads" -c "$connections" -d "${duration}s" --latency "$@")
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  local errors
  errors=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  printf '%-10s %12s %10s %10s %10s\n' "$name" "$rps" "$p50" "$p99" "${errors:-0}"
  echo "$rps" > "$work/$name.rps"
}

curl -s -o /dev/null -X POST -H "Content-Type: application/json" \
  -H "X-VTEX-API-AppKey: $IDEMPAY_APP_KEY" -H "X-VTEX-API-AppToken: $IDEMPAY_APP_TOKEN" \
  --data '{"paymentId":"replay-1","transactionId":"tx","reference":"ref","orderId":"order","paymentMethod":"Visa","value":31.9,"currency":"BRL","installments":1,"callbackUrl":"https://gateway.example/callback?X-VTEX-signature=x","card":{"holder":"Bench","number":"4444333322221111","csc":"123","expiration":{"month":"12","year":"2030"}}}' \
  "$url/payments"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); wrk -t$threads -c$connections -d${duration}s"
printf '%-10s %12s %10s %10s %10s\n' scenario "req/s" p50 p99 non-2xx
run manifest "$url/manifest"
run distinct -s bench/create_distinct.lua "$url/payments" -- "run$$"
run replay -s bench/create_replay.lua "$url/payments" -- replay-1
awk -v d="$(cat "$work/distinct.rps")" -v r="$(cat "$work/replay.rps")" -v m="$(cat "$work/manifest.rps")" \
  'BEGIN { printf "ratios to the HTTP ceiling: distinct %.0f%%, replay %.0f%%\n", 100*d/m, 100*r/m }'
