"""issue 30 (2-4): auth_throttles, the shared throttle of every password check and sign-up

One row per throttle key (core/throttling.py: a leaky bucket's level and when it was last touched);
expires_at (indexed) is when the bucket is empty, so old rows are purged by one range delete.

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


def downgrade() -> None:
    op.drop_index("ix_auth_throttles_expires_at", table_name="auth_throttles")
    op.drop_table("auth_throttles")
