"""invoices: the buyer's billing details (company, address, VAT id) copied when the invoice is issued, so
a later profile change leaves issued invoices as they were (issue 22.8). NULL on invoices issued before:
those keep showing the current details.

Revision ID: 0016d
Revises: 0015d
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016d"
down_revision: str | Sequence[str] | None = "0015d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("invoices", sa.Column("billing_company", sa.String(200), nullable=True))
    op.add_column("invoices", sa.Column("billing_address", sa.String(500), nullable=True))
    op.add_column("invoices", sa.Column("billing_vat_id", sa.String(40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invoices") as batch:
        batch.drop_column("billing_vat_id")
        batch.drop_column("billing_address")
        batch.drop_column("billing_company")
