"""IPv6 stock from routed prefixes (issue 16): stock_prefixes, service_subnets, and the gateway change-log
triggers on service_subnets.

A subnet a gateway node must serve or stop serving logs a change of the owning SERVICE in gateway_changes
(key = service_id), exactly as 0012c does for service_ips: INSERT, DELETE, and an UPDATE of released_at
(or of the subnet / service). PostgreSQL: statement-level AFTER triggers with transition tables; SQLite:
row-level triggers.

Revision ID: 0018d
Revises: 0018b
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0018d"
down_revision: str | Sequence[str] | None = "0018b"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WATCHED = "service_id, subnet, released_at"

PG_LOG = """
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({keys}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
"""
PG_FUNCTION = """
CREATE FUNCTION pp_log_service_subnets() RETURNS trigger LANGUAGE plpgsql AS $$
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
PG_KEYS = "SELECT DISTINCT r.service_id::text AS k FROM {rows} r"
PG_CHANGED = (
    "SELECT n.service_id::text AS k FROM new_rows n JOIN old_rows o ON o.id = n.id "
    "WHERE (n.service_id, n.subnet, n.released_at) IS DISTINCT FROM (o.service_id, o.subnet, o.released_at) "
    "UNION SELECT o.service_id::text AS k FROM new_rows n JOIN old_rows o ON o.id = n.id "
    "WHERE n.service_id IS DISTINCT FROM o.service_id"
)
SQLITE_TRIGGER = """
CREATE TRIGGER pp_log_service_subnets_{op} AFTER {event} ON service_subnets FOR EACH ROW BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT {row}.service_id, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0 WHERE true
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""


def _tables() -> None:
    op.create_table(
        "stock_prefixes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("product_kind", sa.String(length=30), nullable=False),
        sa.Column("prefix", sa.String(length=43), nullable=False),
        sa.Column("subnet_len", sa.Integer(), nullable=False, server_default="64"),
        sa.Column("country_maxmind", sa.String(length=2), nullable=False),
        sa.Column("country_ripe", sa.String(length=2), nullable=False),
        sa.Column("next_index", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("retired_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint("subnet_len > 0 AND subnet_len <= 128", name=op.f("ck_stock_prefixes_subnet_len")),
        sa.CheckConstraint("next_index >= 0", name=op.f("ck_stock_prefixes_next_index")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stock_prefixes")),
        sa.UniqueConstraint("prefix", name=op.f("uq_stock_prefixes_prefix")),
    )
    op.create_table(
        "service_subnets",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("prefix_id", sa.BigInteger(), nullable=False),
        sa.Column("subnet", sa.String(length=43), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=False),
        sa.Column("allocated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("released_at", UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.service_id"],
            name=op.f("fk_service_subnets_service_id_services"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["prefix_id"], ["stock_prefixes.id"], name=op.f("fk_service_subnets_prefix_id_stock_prefixes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_subnets")),
    )
    op.create_index("ix_service_subnets_service_id", "service_subnets", ["service_id"])
    op.create_index("ix_service_subnets_prefix_subnet", "service_subnets", ["prefix_id", "subnet"])
    op.create_index(
        "uq_service_subnets_live",
        "service_subnets",
        ["subnet"],
        unique=True,
        postgresql_where=sa.text("released_at IS NULL"),
        sqlite_where=sa.text("released_at IS NULL"),
    )


def upgrade() -> None:
    _tables()
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            PG_FUNCTION.format(
                on_insert=PG_LOG.format(keys=PG_KEYS.format(rows="new_rows")),
                on_delete=PG_LOG.format(keys=PG_KEYS.format(rows="old_rows")),
                on_update=PG_LOG.format(keys=PG_CHANGED),
            )
        )
        for event, ref in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
            ("UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
        ):
            op.execute(
                f"CREATE TRIGGER pp_log_service_subnets_{event.lower()} AFTER {event} ON service_subnets "
                f"REFERENCING {ref} FOR EACH STATEMENT EXECUTE FUNCTION pp_log_service_subnets()"
            )
        return
    for name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("delete", "DELETE", "OLD"),
        ("update", f"UPDATE OF {WATCHED}", "NEW"),
        ("update_old", f"UPDATE OF {WATCHED}", "OLD"),
    ):
        op.execute(SQLITE_TRIGGER.format(op=name, event=event, row=row))


def downgrade() -> None:
    pg = op.get_bind().dialect.name == "postgresql"
    for event in ("insert", "delete", "update", "update_old"):
        op.execute(
            f"DROP TRIGGER IF EXISTS pp_log_service_subnets_{event}" + (" ON service_subnets" if pg else "")
        )
    if pg:
        op.execute("DROP FUNCTION IF EXISTS pp_log_service_subnets()")
    op.drop_index("uq_service_subnets_live", table_name="service_subnets")
    op.drop_index("ix_service_subnets_prefix_subnet", table_name="service_subnets")
    op.drop_index("ix_service_subnets_service_id", table_name="service_subnets")
    op.drop_table("service_subnets")
    op.drop_table("stock_prefixes")
