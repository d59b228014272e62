"""ticket_assignments and ticket_notes: a ticket's assignee on the operators' team and internal notes the
customer never sees (issue 33)

Revision ID: 0035t
Revises: 0036
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0035t"
down_revision: str | Sequence[str] | None = "0036"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ticket_assignments",
        sa.Column("ticket_id", sa.Uuid(), sa.ForeignKey("tickets.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("operator_id", sa.BigInteger(), sa.ForeignKey("operators.id"), nullable=False),
        sa.Column("assigned_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_ticket_assignments_operator_id", "ticket_assignments", ["operator_id"])
    op.create_table(
        "ticket_notes",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        sa.Column("ticket_id", sa.Uuid(), sa.ForeignKey("tickets.id", ondelete="CASCADE"), nullable=False),
        sa.Column("operator_id", sa.BigInteger(), nullable=True),
        sa.Column("author", sa.String(320), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_ticket_notes_ticket_id", "ticket_notes", ["ticket_id"])


def downgrade() -> None:
    op.drop_table("ticket_notes")
    op.drop_table("ticket_assignments")
