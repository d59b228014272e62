#!/usr/bin/env bash
# Back up a ProxyPlane PostgreSQL database and prove the backup restores (docs/deploy.md, "Backups").
#
#   scripts/backup-restore-check.sh postgresql://USER@HOST:PORT/DB [DUMP_FILE]
#
# 1. pg_dump -Fc of DB into DUMP_FILE (default: proxyplane-<db>-<UTC time>.dump in the current directory);
# 2. pg_restore of that file into a fresh scratch database on the same server (dropped at the end);
# 3. compares source and restore: the migration head, the row counts of the money and service tables,
#    every customer's wallet balance and ledger sum, and that each wallet equals its ledger sum.
# Exit 0 and "restore check OK" when everything matches; exit 1 with the differences otherwise.
# Needs pg_dump, pg_restore and psql of the server's major version (or newer), and CREATEDB on the server.
set -euo pipefail

SRC=${1:?usage: $0 postgresql://USER@HOST:PORT/DB [DUMP_FILE]}
SRC=${SRC/postgresql+asyncpg:/postgresql:}
DB=${SRC##*/}
DB=${DB%%\?*}
DUMP=${2:-proxyplane-$DB-$(date -u +%Y%m%dT%H%M%SZ).dump}
SCRATCH="proxyplane_restore_check_$$"
DST="${SRC%/*}/$SCRATCH"
ADMIN="${SRC%/*}/postgres"

pg_dump --format=custom --no-owner --file="$DUMP" "$SRC"
echo "backup written: $DUMP ($(du -h "$DUMP" | cut -f1))"

psql -q -v ON_ERROR_STOP=1 -d "$ADMIN" -c "CREATE DATABASE $SCRATCH"
cleanup() { psql -q -d "$ADMIN" -c "DROP DATABASE IF EXISTS $SCRATCH" >/dev/null 2>&1 || true; }
trap cleanup EXIT
pg_restore --no-owner --exit-on-error --dbname="$DST" "$DUMP"

read -r -d '' QUERY <<'SQL' || true
SELECT 'head ' || string_agg(version_num, ',' ORDER BY version_num) FROM alembic_version;
SELECT 'rows ' || t || ' ' || n FROM (
  SELECT 'customers' t, count(*) n FROM customers UNION ALL
  SELECT 'wallets', count(*) FROM wallets UNION ALL
  SELECT 'ledger_entries', count(*) FROM ledger_entries UNION ALL
  SELECT 'deposits', count(*) FROM deposits UNION ALL
  SELECT 'services', count(*) FROM services UNION ALL
  SELECT 'service_ips', count(*) FROM service_ips UNION ALL
  SELECT 'usage_minutes', count(*) FROM usage_minutes
) counts ORDER BY t;
SELECT 'balance ' || w.customer_id || ' ' || w.balance_cents || ' ' || coalesce(l.total, 0)
  FROM wallets w LEFT JOIN (SELECT customer_id, sum(amount_cents) total FROM ledger_entries GROUP BY 1) l
  ON l.customer_id = w.customer_id ORDER BY w.customer_id;
SQL

before=$(psql -At -v ON_ERROR_STOP=1 -d "$SRC" -c "$QUERY")
after=$(psql -At -v ON_ERROR_STOP=1 -d "$DST" -c "$QUERY")
status=0
if [ "$before" != "$after" ]; then
  echo "restore differs from the source (note: writes to the source during the dump also show here):"
  diff <(echo "$before") <(echo "$after") || true
  status=1
fi
unbalanced=$(echo "$after" | awk '$1 == "balance" && $3 != $4' | head -5)
if [ -n "$unbalanced" ]; then
  echo "wallets that differ from their ledger sum in the restore (customer, wallet, ledger):"
  echo "$unbalanced"
  status=1
fi
if [ "$status" -eq 0 ]; then
  customers=$(echo "$after" | grep -c '^balance ' || true)
  echo "restore check OK: $(echo "$after" | grep "^head "), $customers wallet balances equal, row counts equal"
fi
exit $status
