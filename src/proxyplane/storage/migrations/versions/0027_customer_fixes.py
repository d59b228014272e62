"""issue 30 (customer-facing fixes): sub-users get an optional name (service_subusers.name, up to 64
characters; shown on the dashboard, settable through REST, MCP and the dashboard).

The gateway change triggers on service_subusers fire on an UPDATE OF the columns a node serves (0018b,
0019b): a name change notifies no node.

Revision ID: 0027
Revises: 0026
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | Sequence[str] | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("service_subusers", sa.Column("name", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("service_subusers") as batch:  # SQLite rebuilds the table
        batch.drop_column("name")
