"""service sub-users (issue 18): service_subusers, subuser_whitelist, subuser_usage_minutes,
subuser_usage_errors, and the gateway change-log triggers for the first two.

A change a gateway node must see logs a change of the owning SERVICE in gateway_changes (key =
service_id), exactly as 0012c does for services/service_whitelist:
- service_subusers: INSERT, DELETE, and an UPDATE that changes login, password_enc, enabled,
  traffic_limit_bytes, traffic_limit_requests, max_connections, countries or limit_reached. An UPDATE of the
  usage counters alone (used_bytes, used_requests, notified_pct: every usage flush) logs nothing.
- subuser_whitelist: INSERT and DELETE (key = the sub-user's service).
PostgreSQL: statement-level AFTER triggers with transition tables (an UPDATE trigger with transition tables
takes no column list, so the UPDATE compares old and new rows); SQLite: row-level triggers.

Revision ID: 0018b
Revises: 0017e
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0018b"
down_revision: str | Sequence[str] | None = "0017e"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WATCHED = (
    "login, password_enc, enabled, traffic_limit_bytes, traffic_limit_requests, max_connections, "
    "countries, limit_reached"
)
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")

PG_LOG = """
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({keys}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
"""
PG_FUNCTION = """
CREATE FUNCTION pp_log_{name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN {on_insert}
  ELSIF TG_OP = 'DELETE' THEN {on_delete}
  ELSE {on_update}
  END IF;
  IF FOUND THEN
    PERFORM pg_notify('proxyplane_changes', '');
  END IF;
  RETURN NULL;
END $$
"""
# json has no equality operator: countries compare as text
PG_SUBUSER_CHANGED = (
    "SELECT DISTINCT n.service_id::text AS k FROM new_rows n JOIN old_rows o ON o.id = n.id "
    "WHERE (n.service_id, n.login, n.password_enc, n.enabled, n.traffic_limit_bytes, "
    "n.traffic_limit_requests, n.max_connections, n.countries::text, n.limit_reached) IS DISTINCT FROM "
    "(o.service_id, o.login, o.password_enc, o.enabled, o.traffic_limit_bytes, o.traffic_limit_requests, "
    "o.max_connections, o.countries::text, o.limit_reached)"
)
PG_WHITELIST_KEYS = (
    "SELECT DISTINCT s.service_id::text AS k FROM {rows} r JOIN service_subusers s ON s.id = r.subuser_pk"
)

SQLITE_TRIGGER = """
CREATE TRIGGER pp_log_{table}_{op} AFTER {event} ON {table} FOR EACH ROW {when}BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT {expr}, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0 FROM {source}
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""


def _tables() -> None:
    op.create_table(
        "service_subusers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("subuser_id", sa.Uuid(), nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("login", sa.String(length=64), nullable=False),
        sa.Column("password_enc", sa.String(length=500), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("traffic_limit_bytes", sa.BigInteger(), nullable=True),
        sa.Column("traffic_limit_requests", sa.BigInteger(), nullable=True),
        sa.Column("max_connections", sa.Integer(), nullable=True),
        sa.Column("countries", sa.JSON(), nullable=True),
        sa.Column("used_bytes", sa.BigInteger(), nullable=False),
        sa.Column("used_requests", sa.BigInteger(), nullable=False),
        sa.Column("limit_reached", sa.Boolean(), nullable=False),
        sa.Column("notified_pct", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.service_id"],
            name=op.f("fk_service_subusers_service_id_services"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_subusers")),
        sa.UniqueConstraint("subuser_id", name=op.f("uq_service_subusers_subuser_id")),
        sa.UniqueConstraint("login", name=op.f("uq_service_subusers_login")),
    )
    op.create_index("ix_service_subusers_service_id", "service_subusers", ["service_id"])
    op.create_table(
        "subuser_whitelist",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("ip", sa.String(length=45), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["subuser_pk"],
            ["service_subusers.id"],
            name=op.f("fk_subuser_whitelist_subuser_pk_service_subusers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subuser_whitelist")),
        sa.UniqueConstraint("subuser_pk", "ip", name="uq_subuser_whitelist_subuser_ip"),
    )
    op.create_index("ix_subuser_whitelist_subuser_pk", "subuser_whitelist", ["subuser_pk"])
    op.create_table(
        "subuser_usage_minutes",
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        *[sa.Column(c, sa.BigInteger(), nullable=False) for c in COUNTERS],
        sa.PrimaryKeyConstraint("subuser_pk", "minute", "host", name=op.f("pk_subuser_usage_minutes")),
    )
    op.create_table(
        "subuser_usage_errors",
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "subuser_pk", "minute", "host", "category", name=op.f("pk_subuser_usage_errors")
        ),
    )


def _pg_triggers() -> None:
    subuser_keys = "SELECT DISTINCT r.service_id::text AS k FROM {rows} r"
    op.execute(
        PG_FUNCTION.format(
            name="service_subusers",
            on_insert=PG_LOG.format(keys=subuser_keys.format(rows="new_rows")),
            on_delete=PG_LOG.format(keys=subuser_keys.format(rows="old_rows")),
            on_update=PG_LOG.format(keys=PG_SUBUSER_CHANGED),
        )
    )
    op.execute(
        PG_FUNCTION.format(
            name="subuser_whitelist",
            on_insert=PG_LOG.format(keys=PG_WHITELIST_KEYS.format(rows="new_rows")),
            on_delete=PG_LOG.format(keys=PG_WHITELIST_KEYS.format(rows="old_rows")),
            on_update="NULL;",
        )
    )
    for table, events in (
        ("service_subusers", ("INSERT", "DELETE", "UPDATE")),
        ("subuser_whitelist", ("INSERT", "DELETE")),
    ):
        for event in events:
            ref = {
                "INSERT": "NEW TABLE AS new_rows",
                "DELETE": "OLD TABLE AS old_rows",
                "UPDATE": "NEW TABLE AS new_rows OLD TABLE AS old_rows",
            }[event]
            op.execute(
                f"CREATE TRIGGER pp_log_{table}_{event.lower()} AFTER {event} ON {table} "
                f"REFERENCING {ref} FOR EACH STATEMENT EXECUTE FUNCTION pp_log_{table}()"
            )


def _sqlite_triggers() -> None:
    # an UPDATE that assigns a watched column its old value (the metering's limit_reached) logs nothing
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in WATCHED.split(", "))
    for op_name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("delete", "DELETE", "OLD"),
        ("update", f"UPDATE OF {WATCHED}", "NEW"),
    ):
        op.execute(
            SQLITE_TRIGGER.format(
                table="service_subusers",
                op=op_name,
                event=event,
                when=f"WHEN {changed} " if op_name == "update" else "",
                expr=f"{row}.service_id",
                source="(SELECT 1) WHERE true",
            )
        )
    for op_name, row in (("insert", "NEW"), ("delete", "OLD")):
        op.execute(
            SQLITE_TRIGGER.format(
                table="subuser_whitelist",
                op=op_name,
                event=op_name.upper(),
                when="",
                expr="s.service_id",
                source=f"service_subusers s WHERE s.id = {row}.subuser_pk",
            )
        )


def upgrade() -> None:
    _tables()
    if op.get_bind().dialect.name == "postgresql":
        _pg_triggers()
    else:
        _sqlite_triggers()


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for table, events in (
        ("subuser_whitelist", ("insert", "delete")),
        ("service_subusers", ("insert", "delete", "update")),
    ):
        for event in events:
            op.execute(f"DROP TRIGGER IF EXISTS pp_log_{table}_{event}" + (f" ON {table}" if pg else ""))
        if pg:
            op.execute(f"DROP FUNCTION IF EXISTS pp_log_{table}()")
    op.drop_table("subuser_usage_errors")
    op.drop_table("subuser_usage_minutes")
    op.drop_index("ix_subuser_whitelist_subuser_pk", table_name="subuser_whitelist")
    op.drop_table("subuser_whitelist")
    op.drop_index("ix_service_subusers_service_id", table_name="service_subusers")
    op.drop_table("service_subusers")
