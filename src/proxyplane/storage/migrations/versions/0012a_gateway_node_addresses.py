"""gateway: the local address prefixes of each gateway node (gateway_node_addresses), so that exit IPs no
node can serve are reported (node status, legacy networkstatus/inactive)

Revision ID: 0012a
Revises: 0012e
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0012a"
down_revision: str | Sequence[str] | None = "0012e"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gateway_node_addresses",
        sa.Column("node_id", sa.String(length=40), nullable=False),
        sa.Column("prefixes", sa.JSON(), nullable=False),
        sa.Column("nonlocal_ips", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_gateway_node_addresses")),
    )


def downgrade() -> None:
    op.drop_table("gateway_node_addresses")
