"""PostgreSQL's work per order (issue 15): the same rows and change-log entries, less done to write them

1. stock_ips' change-log trigger for UPDATE becomes row-level `AFTER UPDATE OF <the columns a pool reads>`
   with a WHEN clause that lets only a real change of one of them through (PostgreSQL forbids a column
   list on a trigger with transition tables, so the statement-level trigger of 0012c fired for every
   UPDATE of stock_ips and captured its rows: the allocation, which sets only assigned_count, paid for
   the trigger, its transition tables and a join that found nothing, on every order). Now an UPDATE that
   does not SET those columns never reaches it. The function logs the row's pool (and its old pool when
   it moved) once per transaction: the pools it logged are kept in the transaction-local setting
   `pp.logged_pools` (reverted with a rolled-back savepoint, like the log row), so a bulk retirement of a
   /16 runs one upsert per pool and a cheap test per row, not 65,534 upserts. Same keys, same guard
   (a key this transaction already stamped is not stamped again). INSERT and DELETE keep 0012c's
   statement-level triggers. SQLite already had row-level `UPDATE OF` triggers: unchanged.
2. The service-keyed log functions (services, service_ips, service_whitelist, service_addons,
   proxy_settings) return at once when the statement's rows all belong to the one service this
   transaction stamped last (kept in the transaction-local setting `pp.logged_service`, reverted with a
   rolled-back savepoint like the log row): an order inserts a service, its IPs and its whitelist in one
   statement, and the second and third triggers ran the whole upsert (~0.1 ms each) to find the key
   already stamped. A statement of several services, or of another service, runs the upsert as before.
3. idempotency_records.response is compressed with lz4 instead of pglz when the server has lz4 (an order's
   stored response is ~2 KB: compressed on every store, read back only on a replay).
4. Three indexes that a wider index with the same leading column already serves are dropped (one index
   entry less per row written): service_ips (service_id) [uq_service_ips_service_ip (service_id, ip_id)],
   services (customer_id) [ix_services_customer_status, ix_services_customer_number,
   uq_services_customer_purchase_key], ledger_entries (customer_id) [ix_ledger_entries_customer_seq,
   ix_ledger_entries_customer_id_id]. Both engines.

Revision ID: 0022p
Revises: 0021o
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022p"
down_revision: str | Sequence[str] | None = "0021o"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

POOL_COLUMNS = ("address", "product_kind", "country_maxmind", "country_ripe", "retired_at")
REDUNDANT = (
    ("ix_service_ips_service_id", "service_ips", "service_id"),
    ("ix_services_customer_id", "services", "customer_id"),
    ("ix_ledger_entries_customer_id", "ledger_entries", "customer_id"),
)


def _row(alias: str) -> str:
    return "(" + ", ".join(f"{alias}.{c}" for c in POOL_COLUMNS) + ")"


PG_ROW_FUNCTION = """
CREATE FUNCTION pp_log_stock_ips_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  logged text := coalesce(current_setting('pp.logged_pools', true), '');
BEGIN
  IF position(',' || NEW.product_kind || ',' IN logged) > 0
     AND position(',' || OLD.product_kind || ',' IN logged) > 0 THEN
    RETURN NULL;  -- both pools already stamped by this transaction
  END IF;
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
    FROM (SELECT 'pool:' || NEW.product_kind AS k UNION SELECT 'pool:' || OLD.product_kind) d
    WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                      WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
  IF logged = '' THEN
    logged := ',';
  END IF;
  IF position(',' || NEW.product_kind || ',' IN logged) = 0 THEN
    logged := logged || NEW.product_kind || ',';
  END IF;
  IF position(',' || OLD.product_kind || ',' IN logged) = 0 THEN
    logged := logged || OLD.product_kind || ',';
  END IF;
  PERFORM set_config('pp.logged_pools', logged, true);
  RETURN NULL;
END $$
"""
PG_ROW_TRIGGER = (
    f"CREATE TRIGGER pp_log_stock_ips_update AFTER UPDATE OF {', '.join(POOL_COLUMNS)} ON stock_ips "
    f"FOR EACH ROW WHEN ({_row('OLD')} IS DISTINCT FROM {_row('NEW')}) "
    "EXECUTE FUNCTION pp_log_stock_ips_row()"
)
# 0012c's statement-level trigger, for the downgrade (its function pp_log_stock_ips() stays: INSERT/DELETE)
PG_STATEMENT_TRIGGER = (
    "CREATE TRIGGER pp_log_stock_ips_update AFTER UPDATE ON stock_ips "
    "REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION pp_log_stock_ips()"
)
BY_SERVICE = ("services", "service_ips", "service_whitelist", "service_addons", "proxy_settings")
UPSERT = """
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({rows}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;"""
NEW_KEYS = "SELECT DISTINCT r.service_id::text AS k FROM new_rows r"
OLD_KEYS = "SELECT DISTINCT r.service_id::text AS k FROM old_rows r"
BOTH_KEYS = (
    "SELECT r.service_id::text AS k FROM new_rows r UNION SELECT r.service_id::text AS k FROM old_rows r"
)
# 0012c's function as 0020i left it (the downgrade) and the same with the one-service fast path
PG_SERVICE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION pp_log_{{name}}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN{UPSERT.format(rows=NEW_KEYS)}
  ELSIF TG_OP = 'DELETE' THEN{UPSERT.format(rows=OLD_KEYS)}
  ELSE{UPSERT.format(rows=BOTH_KEYS)}
  END IF;
  RETURN NULL;
END $$
"""
PG_SERVICE_FAST_FUNCTION = f"""
CREATE OR REPLACE FUNCTION pp_log_{{name}}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  lo text;
  hi text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT min(r.service_id::text), max(r.service_id::text) INTO lo, hi FROM new_rows r;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT min(r.service_id::text), max(r.service_id::text) INTO lo, hi FROM old_rows r;
  ELSE
    SELECT min(k), max(k) INTO lo, hi FROM ({BOTH_KEYS}) d;
  END IF;
  IF lo IS NULL OR (lo = hi AND lo = current_setting('pp.logged_service', true)) THEN
    RETURN NULL;  -- no rows, or only the service this transaction stamped last
  END IF;
  IF TG_OP = 'INSERT' THEN{UPSERT.format(rows=NEW_KEYS)}
  ELSIF TG_OP = 'DELETE' THEN{UPSERT.format(rows=OLD_KEYS)}
  ELSE{UPSERT.format(rows=BOTH_KEYS)}
  END IF;
  IF lo = hi THEN
    PERFORM set_config('pp.logged_service', lo, true);
  END IF;
  RETURN NULL;
END $$
"""
LZ4 = "SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP TRIGGER pp_log_stock_ips_update ON stock_ips")
        op.execute(PG_ROW_FUNCTION)
        op.execute(PG_ROW_TRIGGER)
        for name in BY_SERVICE:
            op.execute(PG_SERVICE_FAST_FUNCTION.format(name=name))
        if bind.execute(sa.text(LZ4)).first() is not None:
            op.execute("ALTER TABLE idempotency_records ALTER COLUMN response SET COMPRESSION lz4")
    for name, table, _column in REDUNDANT:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in REDUNDANT:
        op.create_index(name, table, [column])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE idempotency_records ALTER COLUMN response SET COMPRESSION default")
        op.execute("DROP TRIGGER pp_log_stock_ips_update ON stock_ips")
        op.execute("DROP FUNCTION pp_log_stock_ips_row()")
        op.execute(PG_STATEMENT_TRIGGER)
        for name in BY_SERVICE:
            op.execute(PG_SERVICE_FUNCTION.format(name=name))
