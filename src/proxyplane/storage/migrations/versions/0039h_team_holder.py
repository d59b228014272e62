"""customers.holder_member_id: the member an account was handed over to (issue 34.5); null while the
account's own sign-in holds it. No foreign key (team_members already references customers both ways).

Revision ID: 0039h
Revises: 0038
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0039h"
down_revision: str | Sequence[str] | None = "0038"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (SQLite too): a batch table copy would rebuild customers and its dependants
    op.add_column("customers", sa.Column("holder_member_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("customers", "holder_member_id")
