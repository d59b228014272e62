"""usage_batches: the ids of usage batches applied, so a gateway's spooled batch is applied once (issue 35)

Revision ID: 0031
Revises: 0030
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0031"
down_revision: str | Sequence[str] | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "usage_batches",
        sa.Column("batch_id", sa.String(length=36), nullable=False),
        sa.Column("applied_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("batch_id", name=op.f("pk_usage_batches")),
    )
    op.create_index("ix_usage_batches_applied_at", "usage_batches", ["applied_at"])


def downgrade() -> None:
    op.drop_index("ix_usage_batches_applied_at", table_name="usage_batches")
    op.drop_table("usage_batches")
