#!/usr/bin/env bash
# start: install PostgreSQL (Debian package) if missing, run a throwaway server on 127.0.0.1:$PGPORT,
# print its URL. stop: stop and delete it. Needs root (or an existing PostgreSQL install and a writable dir).
set -euo pipefail
cd "$(dirname "$0")/.."
PGPORT="${PROXYPLANE_PG_PORT:-55432}"
DATA="${PROXYPLANE_PG_DIR:-/tmp/proxyplane-pg-$PGPORT}"
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-}" in
start)
  BIN=$(find_bin)
  if [ -z "$BIN" ]; then
    if [ "$(id -u)" != 0 ]; then echo "PostgreSQL is not installed and we are not root" >&2; exit 1; fi
    echo "installing postgresql (Debian) ..." >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    BIN=$(find_bin)
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then useradd --system postgres; fi
  as_pg "$BIN/pg_ctl" -D "$DATA" stop -m immediate >/dev/null 2>&1 || true
  rm -rf "$DATA"; mkdir -p "$DATA"
  [ "$(id -u)" = 0 ] && chown postgres "$DATA"
  as_pg "$BIN/initdb" -D "$DATA" -U postgres -A trust --no-sync >/dev/null
  # the port may be taken right now (it lies in the ephemeral range: any outgoing connection can hold
  # it): then the next ones are tried
  for attempt in 0 1 2 3 4 5 6 7 8 9; do
    port=$((PGPORT + attempt * 7))
    if as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $DATA -c fsync=off -c max_connections=200" start >/dev/null 2>&1; then
      PGPORT=$port; break
    fi
    [ "$attempt" = 9 ] && { tail -5 "$DATA/server.log" >&2; exit 1; }
  done
  as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres proxyplane_test
  echo "postgresql://postgres@127.0.0.1:$PGPORT/proxyplane_test"
  ;;
stop)
  BIN=$(find_bin)
  [ -n "$BIN" ] && as_pg "$BIN/pg_ctl" -D "$DATA" stop -m fast >/dev/null 2>&1 || true
  rm -rf "$DATA"
  ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
