"""operator_audit.outcome: a refused operator attempt is a row too (issue 33): "ok", "refused" (the role
lacks the permission), "wrong" (a bad password or code), "locked"

Revision ID: 0035
Revises: 0031
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035"
down_revision: str | Sequence[str] | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # ADD COLUMN fires no UPDATE trigger (the table's append-only triggers stay as they are)
    op.add_column("operator_audit", sa.Column("outcome", sa.String(20), nullable=False, server_default="ok"))
    op.create_index("ix_operator_audit_outcome", "operator_audit", ["outcome"])


def downgrade() -> None:
    op.drop_index("ix_operator_audit_outcome", table_name="operator_audit")
    op.drop_column("operator_audit", "outcome")  # SQLite >= 3.35: ALTER TABLE DROP COLUMN
