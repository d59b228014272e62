"""api_keys.confirm_spending (issue 21.3): a key that requires the person to confirm every spend over MCP
(elicitation); false for every existing key.

Revision ID: 0018g
Revises: 0018f
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018g"
down_revision: str | Sequence[str] | None = "0018f"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.add_column(
            sa.Column("confirm_spending", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("confirm_spending")
