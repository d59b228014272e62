"""gateway_client_ips: client addresses seen per service by each gateway process (issue 32.5)

Revision ID: 0036
Revises: 0033
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0036"
down_revision: str | Sequence[str] | None = "0033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gateway_client_ips",
        sa.Column("reporter_id", sa.String(length=60), nullable=False),
        sa.Column("seen", sa.JSON(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("reporter_id", name=op.f("pk_gateway_client_ips")),
    )


def downgrade() -> None:
    op.drop_table("gateway_client_ips")
