"""web_sessions.viewed_by: a read-only dashboard session opened by an operator (issue 33, view as customer)

Revision ID: 0040v
Revises: 0039h
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0040v"
down_revision: str | Sequence[str] | None = "0039h"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.add_column(sa.Column("viewed_by", sa.String(length=320), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_column("viewed_by")
