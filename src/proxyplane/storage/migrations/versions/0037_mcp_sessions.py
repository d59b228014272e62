"""mcp_sessions, mcp_relay: MCP sessions and listen events shared by all API processes (issue 35.3)

Revision ID: 0037
Revises: 0035t
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0037"
down_revision: str | Sequence[str] | None = "0035t"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_sessions",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=True),
        sa.Column("protocol_version", sa.String(length=40), nullable=False),
        sa.Column("client", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("seen_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_mcp_sessions")),
    )
    op.create_index("ix_mcp_sessions_seen_at", "mcp_sessions", ["seen_at"])
    op.create_table(
        "mcp_relay",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("origin", sa.String(length=40), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_relay")),
    )
    op.create_index("ix_mcp_relay_created_at", "mcp_relay", ["created_at"])


def downgrade() -> None:
    op.drop_table("mcp_relay")
    op.drop_table("mcp_sessions")
