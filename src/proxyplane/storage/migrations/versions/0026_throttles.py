"""issue 30 (2-4): auth_throttles, the shared throttle of every password check and sign-up

One row per throttle key (core/throttling.py: a leaky bucket's level and when it was last touched);
expires_at (indexed) is when the bucket is empty, so old rows are purged by one range delete.
login_failures (one row per failed dashboard sign-in, the 5-per-email lockout) is dropped: nothing reads
or writes it any more.

Revision ID: 0026
Revises: 0025
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0026"
down_revision: str | Sequence[str] | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "auth_throttles",
        sa.Column("key", sa.String(400), primary_key=True),
        sa.Column("level", sa.Float(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_auth_throttles_expires_at", "auth_throttles", ["expires_at"])
    op.drop_table("login_failures")


def downgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("client_ip", sa.String(length=45), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_login_failures"),
    )
    for column in ("email", "client_ip", "created_at"):
        op.create_index(f"ix_login_failures_{column}", "login_failures", [column])
    op.drop_index("ix_auth_throttles_expires_at", table_name="auth_throttles")
    op.drop_table("auth_throttles")
