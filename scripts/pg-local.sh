#!/bin/bash
# A throwaway PostgreSQL cluster for trying idempay on PostgreSQL, for its tests and for the
# benchmark. Debian's postgresql package, no container; trust authentication on 127.0.0.1
# only: never for real data.
#
#   scripts/pg-local.sh start DIR [PORT]
#                                   creates (first time) and starts a cluster under DIR on
#                                   PORT (default: a free port); prints its connection URI
#   scripts/pg-local.sh stop DIR    stops it (DIR stays; remove it to throw the data away)
#   scripts/pg-local.sh standby DIR PRIMARY_PORT [PORT]
#                                   a synchronous streaming standby of the cluster on
#                                   PRIMARY_PORT (made synchronous there: a commit waits for
#                                   it), under DIR; prints its URI
#   scripts/pg-local.sh promote DIR the standby becomes a primary
#   scripts/pg-local.sh crash DIR   SIGKILLs the cluster's postmaster (a lost machine)
set -euo pipefail

command=${1:-}
dir=${2:-}
if [[ -z "$command" || -z "$dir" ]]; then
  echo "usage: $0 start DIR [PORT] | stop DIR | standby DIR PRIMARY_PORT [PORT] | promote DIR | crash DIR" >&2
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
  standby)
    primary=${3:?PRIMARY_PORT missing}
    port=${4:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    rm -rf "$dir/data"
    # -R writes standby.signal and primary_conninfo; the copy streams from the primary from then on.
    as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$dir/data" -R -X stream \
      -c fast >"$dir/basebackup.log" 2>&1
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on -c cluster_name=standby" \
      start >/dev/null
    # Synchronous from now on: the primary acknowledges a commit once the standby has it.
    psql -X -q -h 127.0.0.1 -p "$primary" -U postgres -d postgres \
      -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
      state=$(psql -X -At -h 127.0.0.1 -p "$primary" -U postgres -d postgres \
        -c "SELECT sync_state FROM pg_stat_replication LIMIT 1")
      [[ "$state" == "sync" ]] && break
      sleep 0.1
    done
    [[ "$state" == "sync" ]] || { echo "pg-local: the standby did not become synchronous" >&2; exit 1; }
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  promote)
    as_owner "$bin/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
    ;;
  crash)
    kill -9 "$(head -1 "$dir/data/postmaster.pid")"
    ;;
  *)
    echo "usage: $0 start|stop|standby|promote|crash DIR" >&2
    exit 2
    ;;
esac
