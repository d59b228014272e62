"""customer_billing_details: company, address and VAT id a customer wants on their invoices (issue 22.8)

Revision ID: 0014d
Revises: 0013b
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0014d"
down_revision: str | Sequence[str] | None = "0013b"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "customer_billing_details",
        sa.Column(
            "customer_id", sa.Integer(), sa.ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("company", sa.String(200), nullable=False, server_default=""),
        sa.Column("address", sa.String(500), nullable=False, server_default=""),
        sa.Column("vat_id", sa.String(40), nullable=False, server_default=""),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("customer_billing_details")
