"""gateway: usage per minute and destination, usage errors, sticky sessions, proxy settings;
index on services.updated_at (the gateway's change marker)

Revision ID: 0006
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "usage_minutes",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("connections", sa.BigInteger(), nullable=False),
        sa.Column("bytes_up", sa.BigInteger(), nullable=False),
        sa.Column("bytes_down", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("service_id", "minute", "host", name=op.f("pk_usage_minutes")),
    )
    op.create_table(
        "usage_errors",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("minute", UTCDateTime(timezone=True), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("category", sa.String(length=40), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("service_id", "minute", "host", "category", name=op.f("pk_usage_errors")),
    )
    op.create_table(
        "sticky_sessions",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("sid", sa.String(length=64), nullable=False),
        sa.Column("exit_ip", sa.String(length=45), nullable=False),
        sa.Column("started_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("ended", sa.Boolean(), nullable=False),
        sa.Column("writer", sa.String(length=40), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("service_id", "sid", name=op.f("pk_sticky_sessions")),
    )
    op.create_index("ix_sticky_sessions_updated_at", "sticky_sessions", ["updated_at"])
    op.create_table(
        "proxy_settings",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("session_mode", sa.String(length=10), nullable=False),
        sa.Column("pin", sa.String(length=45), nullable=True),
        sa.Column("sticky_ttl_seconds", sa.Integer(), nullable=False),
        sa.Column("rotation_key_hash", sa.String(length=64), nullable=True),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.service_id"],
            name=op.f("fk_proxy_settings_service_id_services"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("service_id", name=op.f("pk_proxy_settings")),
    )
    op.create_index("ix_services_updated_at", "services", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_services_updated_at", table_name="services")
    op.drop_table("proxy_settings")
    op.drop_index("ix_sticky_sessions_updated_at", table_name="sticky_sessions")
    op.drop_table("sticky_sessions")
    op.drop_table("usage_errors")
    op.drop_table("usage_minutes")
