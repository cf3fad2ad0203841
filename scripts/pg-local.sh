#!/bin/bash
# A throwaway PostgreSQL cluster for trying idempay on PostgreSQL, for its tests and for the
# benchmark. Debian's postgresql package, no container; trust authentication on 127.0.0.1
# only: never for real data.
#
#   scripts/pg-local.sh start DIR [PORT]
#                                   creates (first time) and starts a cluster under DIR on
#                                   PORT (default: a free port); prints its connection URI
#   scripts/pg-local.sh stop DIR    stops it (DIR stays; remove it to throw the data away)
set -euo pipefail

command=${1:-}
dir=${2:-}
if [[ -z "$command" || -z "$dir" ]]; then
  echo "usage: $0 start DIR [PORT] | stop DIR" >&2
  exit 2
fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ -z "$bin" ]]; then
  echo "pg-local: PostgreSQL is not installed (apt-get install postgresql)" >&2
  exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# PostgreSQL refuses to run as root: as root, the cluster belongs to the package's user.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    chown -R postgres:postgres "$dir"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$command" in
  start)
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
      as_owner "$bin/initdb" -D "$dir/data" --auth=trust --username=postgres --encoding=UTF8 >"$dir/initdb.log"
    fi
    port=${3:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on" start >/dev/null
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
