#!/bin/bash
# A local high-availability PostgreSQL for idempay, from Debian's packages, no container: three
# etcd members, three PostgreSQL nodes each run by Patroni (synchronous replication: a commit is
# acknowledged once a standby has it), and haproxy sending connections to the leader (Patroni's
# REST check, GET /primary). Trust authentication on 127.0.0.1 only: for trying failover and
# for tests, never for real data. The configuration files it fills in are deploy/ha/*.in.
#
#   scripts/ha-local.sh start DIR    creates (first time) and starts it all under DIR, waits for a
#                                    leader and a synchronous standby, prints two connection URIs:
#                                    haproxy's, and libpq's own multi-host one
#   scripts/ha-local.sh stop DIR     stops it all (DIR stays; remove it to throw the data away)
#   scripts/ha-local.sh status DIR   the members and their roles (patronictl list)
#   scripts/ha-local.sh node DIR N   the pids of node N's Patroni and PostgreSQL, and its ports
set -euo pipefail

command=${1:-}
dir=${2:-}
if [[ -z "$command" || -z "$dir" ]]; then
  echo "usage: $0 start DIR | stop DIR | status DIR | node DIR N" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
ports="$dir/ports"  # the ports chosen the first time, kept for restarts

install_missing() {
  local missing=()
  for program in patroni:patroni etcd:etcd-server etcdctl:etcd-client haproxy:haproxy psql:postgresql; do
    command -v "${program%%:*}" >/dev/null || missing+=("${program#*:}")
  done
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

choose_ports() {
  [[ -f "$ports" ]] && return
  {
    for n in 1 2 3; do
      echo "ETCD_CLIENT_$n=$(free_port)"
      echo "ETCD_PEER_$n=$(free_port)"
      echo "PG_$n=$(free_port)"
      echo "REST_$n=$(free_port)"
    done
    echo "HAPROXY=$(free_port)"
  } >"$ports"
}

# Fills in a template: @KEY@ becomes the value of KEY=... among the arguments.
fill() {
  local template=$1
  shift
  python3 - "$template" "$@" <<'PY'
import sys
text = open(sys.argv[1]).read()
for pair in sys.argv[2:]:
    key, value = pair.split("=", 1)
    text = text.replace("@" + key + "@", value)
assert "@" not in text.replace("@@", ""), "unfilled placeholder in " + sys.argv[1]
sys.stdout.write(text)
PY
}

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_etcd() {
  local cluster="e1=http://127.0.0.1:$ETCD_PEER_1,e2=http://127.0.0.1:$ETCD_PEER_2,e3=http://127.0.0.1:$ETCD_PEER_3"
  for n in 1 2 3; do
    running "$dir/etcd$n.pid" && continue
    local client peer state=new
    client=$(eval echo "\$ETCD_CLIENT_$n")
    peer=$(eval echo "\$ETCD_PEER_$n")
    [[ -d "$dir/etcd$n/member" ]] && state=existing
    etcd --name "e$n" --data-dir "$dir/etcd$n" --enable-v2 \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "$cluster" --initial-cluster-token idempay-ha --initial-cluster-state "$state" \
      >>"$dir/etcd$n.log" 2>&1 &
    echo $! >"$dir/etcd$n.pid"
  done
  local endpoints="127.0.0.1:$ETCD_CLIENT_1,127.0.0.1:$ETCD_CLIENT_2,127.0.0.1:$ETCD_CLIENT_3"
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints="$endpoints" endpoint health >/dev/null 2>&1 && return
    sleep 0.2
  done
  echo "ha-local: etcd did not become healthy (logs: $dir/etcd*.log)" >&2
  exit 1
}

start_patroni() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  local hosts="127.0.0.1:$ETCD_CLIENT_1,127.0.0.1:$ETCD_CLIENT_2,127.0.0.1:$ETCD_CLIENT_3"
  for n in 1 2 3; do
    local node="$dir/node$n"
    mkdir -p "$node"
    fill "$here/deploy/ha/patroni.yml.in" NAME="node$n" REST_PORT="$(eval echo "\$REST_$n")" \
      PG_PORT="$(eval echo "\$PG_$n")" ETCD_HOSTS="$hosts" NODE_DIR="$node" BIN_DIR="$bin" >"$node/patroni.yml"
    chmod 700 "$node"
    chown -R postgres:postgres "$node"
    running "$node/patroni.pid" && continue
    # PostgreSQL refuses to run as root: Patroni runs as the package's user (setpriv execs it,
    # so that the pid kept is Patroni's own: the fault tests kill it).
    HOME=/var/lib/postgresql setpriv --reuid=postgres --regid=postgres --init-groups \
      patroni "$node/patroni.yml" >>"$node/patroni.log" 2>&1 &
    echo $! >"$node/patroni.pid"
  done
}

start_haproxy() {
  running "$dir/haproxy.pid" && return
  local servers=""
  for n in 1 2 3; do
    servers+="  server node$n 127.0.0.1:$(eval echo "\$PG_$n") check port $(eval echo "\$REST_$n")"$'\n'
  done
  fill "$here/deploy/ha/haproxy.cfg.in" DIR="$dir" HAPROXY_PORT="$HAPROXY" SERVERS="$servers" >"$dir/haproxy.cfg"
  haproxy -D -f "$dir/haproxy.cfg"
}

# The node whose Patroni answers GET /primary with 200, and a synchronous standby.
wait_for_roles() {
  for _ in $(seq 240); do
    if [[ -n "$(leader)" ]] && patronictl -c "$dir/node1/patroni.yml" list -f json 2>/dev/null |
      python3 -c 'import json,sys; sys.exit(0 if any(m["Role"] == "Sync Standby" and m["State"] in ("running", "streaming") for m in json.load(sys.stdin)) else 1)'; then
      return
    fi
    sleep 0.5
  done
  echo "ha-local: no leader with a synchronous standby after 2 minutes (logs: $dir/node*/patroni.log)" >&2
  exit 1
}

# haproxy counts every server up when it starts, until its checks say otherwise (a second or
# so): ready once several connections in a row (round robin: each server) reach the primary.
wait_for_haproxy() {
  local in_a_row=0
  for _ in $(seq 150); do
    if [[ $(psql -X -At -q "postgresql://postgres@127.0.0.1:$HAPROXY/postgres?connect_timeout=2" \
      -c 'SELECT pg_is_in_recovery()' 2>/dev/null) == f ]]; then
      ((++in_a_row >= 6)) && return
    else
      in_a_row=0
    fi
    sleep 0.2
  done
  echo "ha-local: haproxy does not reach the leader (config: $dir/haproxy.cfg)" >&2
  exit 1
}

leader() {
  for n in 1 2 3; do
    if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$(eval echo "\$REST_$n")/primary") == 200 ]]; then
      echo "node$n"
      return
    fi
  done
}

# Stops the processes of the pidfiles given, together: SIGTERM to each, up to 30 s for all of
# them to end, then SIGKILL. Together, so that stopping one Patroni never makes the others
# elect a new leader, only to be stopped in turn.
stop_pidfiles() {
  local pidfile pids=()
  for pidfile in "$@"; do
    if running "$pidfile"; then
      pids+=("$(cat "$pidfile")")
      kill -TERM "${pids[-1]}" 2>/dev/null || true
    fi
  done
  for _ in $(seq 300); do
    local alive=0 pid
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    [[ $alive -eq 1 ]] || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f "$@"
}

case "$command" in
  start)
    [[ $(id -u) -eq 0 ]] || { echo "ha-local: run as root (Patroni runs as postgres, etcd and haproxy as root)" >&2; exit 1; }
    install_missing
    choose_ports
    # shellcheck source=/dev/null
    source "$ports"
    start_etcd
    start_patroni
    wait_for_roles
    start_haproxy
    wait_for_haproxy
    echo "postgresql://postgres@127.0.0.1:$HAPROXY/postgres"
    echo "postgresql://postgres@127.0.0.1:$PG_1,127.0.0.1:$PG_2,127.0.0.1:$PG_3/postgres?target_session_attrs=read-write&connect_timeout=2"
    ;;
  stop)
    [[ -f "$ports" ]] || exit 0
    stop_pidfiles "$dir/haproxy.pid"
    stop_pidfiles "$dir"/node{1,2,3}/patroni.pid  # each Patroni stops its PostgreSQL
    stop_pidfiles "$dir"/etcd{1,2,3}.pid
    ;;
  status)
    patronictl -c "$dir/node1/patroni.yml" list
    ;;
  node)
    n=${3:?N missing}
    # shellcheck source=/dev/null
    source "$ports"
    postmaster=$(head -1 "$dir/node$n/data/postmaster.pid" 2>/dev/null || true)
    echo "patroni=$(cat "$dir/node$n/patroni.pid" 2>/dev/null) postgres=$postmaster pg_port=$(eval echo "\$PG_$n") rest_port=$(eval echo "\$REST_$n")"
    ;;
  *)
    echo "usage: $0 start DIR | stop DIR | status DIR | node DIR N" >&2
    exit 2
    ;;
esac
