"""Merge the parallel branches of the first build (webhooks, web sessions, add-ons/invoices, legacy,
key spending, gateway health) into one head: later migrations chain after this one.

Revision ID: 0011
Revises: 0003, 0004, 0005, 0007, 0009, 0010
"""

from collections.abc import Sequence

revision: str = "0011"
down_revision: str | Sequence[str] | None = ("0003", "0004", "0005", "0007", "0009", "0010")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
