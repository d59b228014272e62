"""gateway: upstream errors per exit IP (usage_exit_errors), per-node open connection counts
(gateway_node_connections) for cross-node concurrency limits

Revision ID: 0010
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "usage_exit_errors",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("exit_ip", sa.String(length=45), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "service_id", "minute", "exit_ip", "category", name=op.f("pk_usage_exit_errors")
        ),
    )
    op.create_table(
        "gateway_node_connections",
        sa.Column("node_id", sa.String(length=40), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_gateway_node_connections")),
    )


def downgrade() -> None:
    op.drop_table("gateway_node_connections")
    op.drop_table("usage_exit_errors")
