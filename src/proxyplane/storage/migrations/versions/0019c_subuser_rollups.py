"""sub-users (issue 18): hourly and daily rollups of their usage (subuser_usage_rollups,
subuser_usage_error_rollups) backfilled from their minute rows, and their upstream failures per exit IP
(subuser_usage_exit_errors; earlier failures were metered per service only and are not split)

Revision ID: 0019c
Revises: 0019b
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0019c"
down_revision: str | Sequence[str] | None = "0019b"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")


def truncate(dialect: str, column: str, span: str) -> str:
    """SQL for the UTC start of the hour ("h") or day ("d") of a UTCDateTime column (as in 0012e)."""
    if dialect == "sqlite":
        if span == "h":
            return f"substr({column}, 1, 13) || ':00:00.000000'"
        return f"substr({column}, 1, 10) || ' 00:00:00.000000'"
    unit = "hour" if span == "h" else "day"
    return f"(date_trunc('{unit}', {column} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"


def backfill_sql(dialect: str) -> list[str]:
    """Hours from the minutes, then days from the hours just written, for both rollup tables."""
    out = []
    for table, source, key, counters in (
        ("subuser_usage_rollups", "subuser_usage_minutes", "host", COUNTERS),
        ("subuser_usage_error_rollups", "subuser_usage_errors", "category", ("count",)),
    ):
        cols = ", ".join(counters)
        sums = ", ".join(f"sum({c})" for c in counters)
        for span, src, col, cond in (("h", source, "minute", "1 = 1"), ("d", table, "bucket", "span = 'h'")):
            bucket = truncate(dialect, col, span)
            out.append(
                f"INSERT INTO {table} (subuser_pk, span, bucket, {key}, {cols}) "
                f"SELECT subuser_pk, '{span}', {bucket}, {key}, {sums} FROM {src} WHERE {cond} "
                f"GROUP BY subuser_pk, {bucket}, {key}"
            )
    return out


def upgrade() -> None:
    op.create_table(
        "subuser_usage_rollups",
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("span", sa.String(length=1), nullable=False),
        sa.Column("bucket", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        *[sa.Column(c, sa.BigInteger(), nullable=False) for c in COUNTERS],
        sa.PrimaryKeyConstraint(
            "subuser_pk", "span", "bucket", "host", name=op.f("pk_subuser_usage_rollups")
        ),
    )
    op.create_table(
        "subuser_usage_error_rollups",
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("span", sa.String(length=1), nullable=False),
        sa.Column("bucket", UTCDateTime(timezone=True), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "subuser_pk", "span", "bucket", "category", name=op.f("pk_subuser_usage_error_rollups")
        ),
    )
    op.create_table(
        "subuser_usage_exit_errors",
        sa.Column("subuser_pk", sa.BigInteger(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("exit_ip", sa.String(length=45), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "subuser_pk", "minute", "exit_ip", "category", name=op.f("pk_subuser_usage_exit_errors")
        ),
    )
    for statement in backfill_sql(op.get_bind().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.drop_table("subuser_usage_exit_errors")
    op.drop_table("subuser_usage_error_rollups")
    op.drop_table("subuser_usage_rollups")
