"""gateway change log: gateway_changes (compacted by key, read by seq) and the triggers that fill it

Every writer (domain code, raw SQL, the legacy adapter, an operator's psql) is caught by triggers:
- PostgreSQL: statement-level AFTER triggers with transition tables on services, service_ips,
  service_whitelist, service_addons, proxy_settings (key = service_id) and stock_ips (key = pool:<kind>);
  one upsert per distinct key per statement (a 10,000-IP insert for one service writes one log row), and
  none for a key this transaction already stamped (its one seq is enough: the transaction commits whole;
  without that guard, 10,000 one-row statements in one transaction re-updated the same log row 10,000
  times, and each upsert walked the growing chain of its versions: quadratic, 63 s); then NOTIFY
  proxyplane_changes (delivered at commit) so nodes wake at once;
- SQLite: row-level triggers (no statement triggers there); seq = max(seq) + 1 is safe because SQLite has
  one writer at a time.
stock_ips updates only count when a column a rotating pool reads changes (not assigned_count).

Revision ID: 0012c
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012c"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BY_SERVICE = ("services", "service_ips", "service_whitelist", "service_addons", "proxy_settings")
SERVICE_COLUMNS = (
    "status, login, password_enc, max_connections, parameters, current_period_end, product_kind, "
    "geo_source, updated_at"
)
POOL_COLUMNS = "address, product_kind, country_maxmind, country_ripe, retired_at"

PG_FUNCTION = """
CREATE FUNCTION pp_log_{name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM (SELECT DISTINCT {key} AS k FROM new_rows r) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM (SELECT DISTINCT {key} AS k FROM old_rows r) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
  ELSE
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({changed}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
  END IF;
  IF FOUND THEN
    PERFORM pg_notify('proxyplane_changes', '');
  END IF;
  RETURN NULL;
END $$
"""
# an UPDATE of stock_ips counts only when a column a pool reads changed (orders bump assigned_count)
PG_STOCK_CHANGED = (
    "SELECT {side}.k FROM (SELECT n.id, 'pool:' || n.product_kind AS k, 'pool:' || o.product_kind AS ok "
    "FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE (n.address, n.product_kind, n.country_maxmind, "
    "n.country_ripe, n.retired_at) IS DISTINCT FROM (o.address, o.product_kind, o.country_maxmind, "
    "o.country_ripe, o.retired_at)) x"
)

SQLITE_TRIGGER = """
CREATE TRIGGER pp_log_{table}_{op} AFTER {event} ON {table} FOR EACH ROW BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT {expr}, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0 WHERE true
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""


def _triggers() -> list[tuple[str, str, str]]:
    """(table, key expression over a row alias, columns an UPDATE must touch: '' = any)."""
    rows = [(t, "{r}.service_id", SERVICE_COLUMNS if t == "services" else "") for t in BY_SERVICE]
    return [*rows, ("stock_ips", "'pool:' || {r}.product_kind", POOL_COLUMNS)]


def upgrade() -> None:
    op.create_table(
        "gateway_changes",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("xid", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_gateway_changes")),
    )
    op.create_index("ix_gateway_changes_seq", "gateway_changes", ["seq"], unique=True)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE gateway_change_seq AS bigint")
        for table, expr, _columns in _triggers():
            key = expr.format(r="r") + ("::text" if "service_id" in expr else "")
            if table == "stock_ips":
                changed = (
                    PG_STOCK_CHANGED.format(side="x").replace("SELECT x.k", "SELECT x.k AS k")
                    + " UNION "
                    + PG_STOCK_CHANGED.format(side="x").replace("SELECT x.k", "SELECT x.ok AS k")
                )
            else:
                changed = f"SELECT {key} AS k FROM new_rows r UNION SELECT {key} AS k FROM old_rows r"
            op.execute(PG_FUNCTION.format(name=table, key=key, changed=changed))
            for event, ref in (
                ("INSERT", "NEW TABLE AS new_rows"),
                ("DELETE", "OLD TABLE AS old_rows"),
                ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
            ):
                op.execute(
                    f"CREATE TRIGGER pp_log_{table}_{event.lower()} AFTER {event} ON {table} "
                    f"REFERENCING {ref} FOR EACH STATEMENT EXECUTE FUNCTION pp_log_{table}()"
                )
    else:
        for table, expr, columns in _triggers():
            for event, row in (("INSERT", "NEW"), ("DELETE", "OLD"), ("UPDATE", "NEW")):
                when = f"UPDATE OF {columns}" if event == "UPDATE" and columns else event
                op.execute(
                    SQLITE_TRIGGER.format(
                        table=table, op=event.lower(), event=when, expr=expr.format(r=row)
                    )
                )
                if event == "UPDATE" and table == "stock_ips":
                    # a row moved to another pool: the old pool changed too
                    op.execute(
                        SQLITE_TRIGGER.format(
                            table=table, op="update_old", event=when, expr=expr.format(r="OLD")
                        )
                    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table, _expr, _columns in _triggers():
            for event in ("insert", "delete", "update"):
                op.execute(f"DROP TRIGGER IF EXISTS pp_log_{table}_{event} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS pp_log_{table}()")
        op.execute("DROP SEQUENCE IF EXISTS gateway_change_seq")
    else:
        for table, _expr, _columns in _triggers():
            for event in ("insert", "delete", "update", "update_old"):
                op.execute(f"DROP TRIGGER IF EXISTS pp_log_{table}_{event}")
    op.drop_index("ix_gateway_changes_seq", table_name="gateway_changes")
    op.drop_table("gateway_changes")
