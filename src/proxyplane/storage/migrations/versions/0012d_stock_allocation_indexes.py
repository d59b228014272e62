"""stock: allocation indexes (pool, country, assigned_count, id) over the IPs on sale, per geo source, so
the set-based allocation reads only the rows it takes, least-shared first, at a million IPs in stock

Revision ID: 0012d
Revises: 0012a
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012d"
down_revision: str | Sequence[str] | None = "0012a"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ON_SALE = sa.text("retired_at IS NULL")


def upgrade() -> None:
    for source in ("maxmind", "ripe"):
        op.create_index(
            f"ix_stock_ips_alloc_{source}",
            "stock_ips",
            ["product_kind", f"country_{source}", "assigned_count", "id"],
            postgresql_where=ON_SALE,
            sqlite_where=ON_SALE,
        )


def downgrade() -> None:
    for source in ("maxmind", "ripe"):
        op.drop_index(f"ix_stock_ips_alloc_{source}", table_name="stock_ips")
