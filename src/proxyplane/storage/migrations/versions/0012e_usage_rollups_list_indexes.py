"""usage: hourly and daily rollups (usage_rollups, usage_error_rollups) backfilled from the minute rows;
indexes for the paged lists (services, ledger) and for reactivating retired stock in bulk

Revision ID: 0012e
Revises: 0012c
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0012e"
down_revision: str | Sequence[str] | None = "0012c"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTERS = "requests, connections, bytes_up, bytes_down, errors"
SUMS = "sum(requests), sum(connections), sum(bytes_up), sum(bytes_down), sum(errors)"


def truncate(dialect: str, column: str, span: str) -> str:
    """SQL for the UTC start of the hour ("h") or day ("d") of a UTCDateTime column. SQLite stores
    them as text `YYYY-MM-DD HH:MM:SS.ffffff`; PostgreSQL as timestamptz (truncated in UTC whatever the
    session's time zone)."""
    if dialect == "sqlite":
        if span == "h":
            return f"substr({column}, 1, 13) || ':00:00.000000'"
        return f"substr({column}, 1, 10) || ' 00:00:00.000000'"
    unit = "hour" if span == "h" else "day"
    return f"(date_trunc('{unit}', {column} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"


def backfill_sql(dialect: str, where: str = "") -> list[str]:
    """Statements that add the minute rows to the rollups (empty for those rows): hours from the
    minutes, then days from the hours just written. `where`, on `service_id` only, limits them to some
    services (bench/platform_data.py uses it after generating minutes set-based)."""
    out = []
    for table, source, key, sums in (
        ("usage_rollups", "usage_minutes", "host", f"{COUNTERS}) SELECT"),
        ("usage_error_rollups", "usage_errors", "category", "count) SELECT"),
    ):
        values = SUMS if table == "usage_rollups" else "sum(count)"
        for span, src, col, cond in (("h", source, "minute", "true"), ("d", table, "bucket", "span = 'h'")):
            bucket = truncate(dialect, col, span)
            cond += f" AND {where}" if where else ""
            out.append(
                f"INSERT INTO {table} (service_id, span, bucket, {key}, {sums} service_id, '{span}', "
                f"{bucket}, {key}, {values} FROM {src} WHERE {cond} GROUP BY service_id, {bucket}, {key}"
            )
    return out


def upgrade() -> None:
    op.create_table(
        "usage_rollups",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("span", sa.String(length=1), nullable=False),
        sa.Column("bucket", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("connections", sa.BigInteger(), nullable=False),
        sa.Column("bytes_up", sa.BigInteger(), nullable=False),
        sa.Column("bytes_down", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("service_id", "span", "bucket", "host", name=op.f("pk_usage_rollups")),
    )
    op.create_table(
        "usage_error_rollups",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("span", sa.String(length=1), nullable=False),
        sa.Column("bucket", UTCDateTime(timezone=True), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "service_id", "span", "bucket", "category", name=op.f("pk_usage_error_rollups")
        ),
    )
    for statement in backfill_sql(op.get_bind().dialect.name):
        op.execute(statement)
    op.create_index("ix_services_customer_number", "services", ["customer_id", "number"])
    op.create_index("ix_ledger_entries_customer_id_id", "ledger_entries", ["customer_id", "id"])
    op.create_index(
        "ix_stock_ips_retired_address",
        "stock_ips",
        ["address"],
        postgresql_where=sa.text("retired_at IS NOT NULL"),
        sqlite_where=sa.text("retired_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_stock_ips_retired_address", table_name="stock_ips")
    op.drop_index("ix_ledger_entries_customer_id_id", table_name="ledger_entries")
    op.drop_index("ix_services_customer_number", table_name="services")
    op.drop_table("usage_error_rollups")
    op.drop_table("usage_rollups")
