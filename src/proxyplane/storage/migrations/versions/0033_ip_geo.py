"""ip_geo: country, region, city, ASN and organisation of each exit IP / prefix per geo source (issue 36)

Revision ID: 0033
Revises: 0034
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0033"
down_revision: str | Sequence[str] | None = "0034"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ip_geo",
        sa.Column("address", sa.String(length=49), nullable=False),
        sa.Column("geo_source", sa.String(length=10), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("region", sa.String(length=100), nullable=True),
        sa.Column("region_code", sa.String(length=8), nullable=True),
        sa.Column("city", sa.String(length=100), nullable=True),
        sa.Column("asn", sa.BigInteger(), nullable=True),
        sa.Column("org", sa.String(length=200), nullable=True),
        sa.Column("overridden", sa.Boolean(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("address", "geo_source", name=op.f("pk_ip_geo")),
    )


def downgrade() -> None:
    op.drop_table("ip_geo")
