"""issue 32: service_quotas (metered traffic: quotas per period, bought traffic, auto top-up) and its
gateway change-log triggers; a row for every live service whose parameters carry a quota

A change a node must see logs a change of the SERVICE in gateway_changes (key = service_id), as 0018b does
for sub-users: INSERT, DELETE, and an UPDATE that changes period, quota_bytes, quota_requests, extra_bytes,
limit_reached, notified_pct (the 80 % crossing: nodes reload the used totals) or period_start. The usage
counters alone (used_bytes, used_requests: every usage flush) log nothing. PostgreSQL: statement-level
triggers with transition tables; SQLite: row-level.

Revision ID: 0030
Revises: 0029
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0030"
down_revision: str | Sequence[str] | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# notified_pct: the 80 % crossing makes every node reload the service's used totals (what all nodes
# flushed), so from there a node misses only the other nodes' traffic since their last flush
WATCHED = (
    "period",
    "quota_bytes",
    "quota_requests",
    "extra_bytes",
    "limit_reached",
    "notified_pct",
    "period_start",
)

PG_LOG = """
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({keys}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
"""
PG_FUNCTION = """
CREATE FUNCTION pp_log_service_quotas() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN {on_insert}
  ELSIF TG_OP = 'DELETE' THEN {on_delete}
  ELSE {on_update}
  END IF;
  RETURN NULL;
END $$
"""
_cols = ", ".join(WATCHED)
_new, _old = ", ".join("n." + c for c in WATCHED), ", ".join("o." + c for c in WATCHED)
PG_CHANGED = (
    "SELECT DISTINCT n.service_id::text AS k FROM new_rows n JOIN old_rows o ON o.service_id = n.service_id "
    f"WHERE ({_new}) IS DISTINCT FROM ({_old})"
)
SQLITE_TRIGGER = """
CREATE TRIGGER pp_log_service_quotas_{op} AFTER {event} ON service_quotas FOR EACH ROW {when}BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT {row}.service_id, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""


def _table() -> sa.Table:
    return op.create_table(
        "service_quotas",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("period", sa.String(length=10), nullable=False),
        sa.Column("quota_bytes", sa.BigInteger(), nullable=True),
        sa.Column("quota_requests", sa.BigInteger(), nullable=True),
        sa.Column("extra_bytes", sa.BigInteger(), nullable=False),
        sa.Column("gb_price_cents", sa.BigInteger(), nullable=False),
        sa.Column("used_bytes", sa.BigInteger(), nullable=False),
        sa.Column("used_requests", sa.BigInteger(), nullable=False),
        sa.Column("limit_reached", sa.Boolean(), nullable=False),
        sa.Column("notified_pct", sa.Integer(), nullable=False),
        sa.Column("period_start", UTCDateTime(timezone=True), nullable=True),
        sa.Column("resets_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("auto_threshold_pct", sa.Integer(), nullable=True),
        sa.Column("auto_gb", sa.Integer(), nullable=False),
        sa.Column("auto_max", sa.Integer(), nullable=False),
        sa.Column("auto_count", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.service_id"],
            name=op.f("fk_service_quotas_service_id_services"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("service_id", name=op.f("pk_service_quotas")),
    )


def _triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        keys = "SELECT DISTINCT r.service_id::text AS k FROM {rows} r"
        op.execute(
            PG_FUNCTION.format(
                on_insert=PG_LOG.format(keys=keys.format(rows="new_rows")),
                on_delete=PG_LOG.format(keys=keys.format(rows="old_rows")),
                on_update=PG_LOG.format(keys=PG_CHANGED),
            )
        )
        for event, ref in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
            ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
        ):
            op.execute(
                f"CREATE TRIGGER pp_log_service_quotas_{event.lower()} AFTER {event} ON service_quotas "
                f"REFERENCING {ref} FOR EACH STATEMENT EXECUTE FUNCTION pp_log_service_quotas()"
            )
        return
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in WATCHED)
    for name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("delete", "DELETE", "OLD"),
        ("update", f"UPDATE OF {_cols}", "NEW"),
    ):
        when = f"WHEN {changed} " if name == "update" else ""
        op.execute(SQLITE_TRIGGER.format(op=name, event=event, when=when, row=row))


def _positive(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _backfill(table: sa.Table) -> None:
    """A row for each live service whose parameters carry a quota (quota_bytes / quota_requests), its
    period the plan's billing term from the term's start (what the dashboard showed as "this period")."""
    bind = op.get_bind()
    services = sa.table(
        "services",
        sa.column("service_id", sa.Uuid()),
        sa.column("status", sa.String()),
        sa.column("parameters", sa.JSON()),
        sa.column("current_period_start", UTCDateTime(timezone=True)),
    )
    query = sa.select(services.c.service_id, services.c.parameters, services.c.current_period_start).where(
        services.c.status.in_(("pending", "active", "suspended"))
    )
    minutes = sa.table(
        "usage_minutes",
        sa.column("service_id", sa.Uuid()),
        sa.column("minute", UTCDateTime(timezone=True)),
        sa.column("requests", sa.BigInteger()),
        sa.column("bytes_up", sa.BigInteger()),
        sa.column("bytes_down", sa.BigInteger()),
    )
    now = datetime.now(UTC)
    rows = []
    for service_id, params, start in bind.execute(query).all():
        params = json.loads(params) if isinstance(params, str) else (params or {})
        qb, qr = _positive(params.get("quota_bytes")), _positive(params.get("quota_requests"))
        if params.get("plan") == "requests":
            qb = None
        elif params.get("plan") == "bandwidth":
            qr = None
        if qb is None and qr is None:
            continue
        used = sa.select(
            sa.func.coalesce(sa.func.sum(minutes.c.bytes_up + minutes.c.bytes_down), 0),
            sa.func.coalesce(sa.func.sum(minutes.c.requests), 0),
        ).where(minutes.c.service_id == service_id)
        if start is not None:
            used = used.where(minutes.c.minute >= start)
        used_bytes, used_requests = bind.execute(used).one()
        full = (qb is not None and used_bytes >= qb) or (qr is not None and used_requests >= qr)
        rows.append(
            {
                "service_id": service_id,
                "period": "term",
                "quota_bytes": qb,
                "quota_requests": qr,
                "extra_bytes": 0,
                "gb_price_cents": _positive(params.get("gb_price_cents")) or 0,
                "used_bytes": int(used_bytes),
                "used_requests": int(used_requests),
                "limit_reached": full,
                "notified_pct": 100 if full else 0,
                "period_start": start,
                "resets_at": None,
                "auto_threshold_pct": None,
                "auto_gb": 0,
                "auto_max": 0,
                "auto_count": 0,
                "updated_at": now,
            }
        )
    if rows:
        op.bulk_insert(table, rows)


def upgrade() -> None:
    table = _table()
    op.create_index("ix_service_quotas_resets_at", "service_quotas", ["resets_at"])
    _triggers()
    _backfill(table)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS pp_log_service_quotas_{event} ON service_quotas")
        op.execute("DROP FUNCTION IF EXISTS pp_log_service_quotas()")
    op.drop_index("ix_service_quotas_resets_at", table_name="service_quotas")
    op.drop_table("service_quotas")
