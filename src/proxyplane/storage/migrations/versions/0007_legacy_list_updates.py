"""legacy API: update_list throttle clock per service

Revision ID: 0007
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import proxyplane.storage.types

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "legacy_list_updates",
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("updated_at", proxyplane.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.service_id"],
            name=op.f("fk_legacy_list_updates_service_id_services"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("service_id", name=op.f("pk_legacy_list_updates")),
    )


def downgrade() -> None:
    op.drop_table("legacy_list_updates")
