"""API-key spending caps (per UTC day and in total) with their counters

Revision ID: 0009
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_key_spending",
        sa.Column("key_id", sa.Uuid(), nullable=False),
        sa.Column("daily_limit_cents", sa.BigInteger(), nullable=True),
        sa.Column("total_limit_cents", sa.BigInteger(), nullable=True),
        sa.Column("spent_total_cents", sa.BigInteger(), nullable=False),
        sa.Column("spent_day", sa.String(length=10), nullable=False),
        sa.Column("spent_day_cents", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "daily_limit_cents IS NULL OR daily_limit_cents >= 0",
            name=op.f("ck_api_key_spending_daily_limit"),
        ),
        sa.CheckConstraint(
            "total_limit_cents IS NULL OR total_limit_cents >= 0",
            name=op.f("ck_api_key_spending_total_limit"),
        ),
        sa.ForeignKeyConstraint(
            ["key_id"], ["api_keys.id"], name=op.f("fk_api_key_spending_key_id_api_keys"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_api_key_spending")),
    )


def downgrade() -> None:
    op.drop_table("api_key_spending")
