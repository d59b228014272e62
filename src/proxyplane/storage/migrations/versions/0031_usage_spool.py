"""issue 35 (gateway usage batches replayed once)

Reserved in the chain so that engineers working in parallel keep one head: this revision's owner replaces
the body (and this docstring) with the real schema change. Until then it changes nothing.

Revision ID: 0031
Revises: 0030
"""

from collections.abc import Sequence

revision: str = "0031"
down_revision: str | Sequence[str] | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
