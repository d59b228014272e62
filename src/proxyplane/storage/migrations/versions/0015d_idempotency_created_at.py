"""idempotency_records: index on created_at, so the retention prune (jobs/idempotency_prune.py) finds
the oldest records without reading the table

Revision ID: 0015d
Revises: 0014d
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015d"
down_revision: str | Sequence[str] | None = "0014d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_idempotency_records_created_at", "idempotency_records", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_idempotency_records_created_at", table_name="idempotency_records")
