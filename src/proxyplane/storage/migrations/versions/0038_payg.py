"""service_quotas: pay-as-you-go columns (issue 32.4): the unit, the units charged, the last hour billed

Revision ID: 0038
Revises: 0037
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0038"
down_revision: str | Sequence[str] | None = "0037"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (SQLite too): a batch table copy would drop 0030's gateway change-log triggers
    op.add_column("service_quotas", sa.Column("payg_unit_bytes", sa.BigInteger(), nullable=True))
    op.add_column(
        "service_quotas", sa.Column("billed_units", sa.BigInteger(), nullable=False, server_default="0")
    )
    op.add_column("service_quotas", sa.Column("billed_hour", UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    for name in ("billed_hour", "billed_units", "payg_unit_bytes"):
        op.drop_column("service_quotas", name)
