"""dashboard: web sessions and failed sign-ins

Revision ID: 0004
Revises: 0001
Create Date: 2026-11-22 18:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import proxyplane.storage.types

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UTC = proxyplane.storage.types.UTCDateTime
BIGINT_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("client_ip", sa.String(length=45), nullable=False),
        sa.Column("user_agent", sa.String(length=300), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.Column("last_seen_at", UTC(timezone=True), nullable=False),
        sa.Column("expires_at", UTC(timezone=True), nullable=False),
        sa.Column("revoked_at", UTC(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_web_sessions_customer_id_customers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
    )
    op.create_index(op.f("ix_web_sessions_customer_id"), "web_sessions", ["customer_id"], unique=False)
    op.create_table(
        "login_failures",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("client_ip", sa.String(length=45), nullable=False),
        sa.Column("created_at", UTC(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    op.create_index(op.f("ix_login_failures_email"), "login_failures", ["email"], unique=False)
    op.create_index(op.f("ix_login_failures_client_ip"), "login_failures", ["client_ip"], unique=False)
    op.create_index(op.f("ix_login_failures_created_at"), "login_failures", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_table("login_failures")
    op.drop_table("web_sessions")
