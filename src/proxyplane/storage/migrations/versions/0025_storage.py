"""issue 31 (storage owns every statement)

Reserved in the chain so that engineers working in parallel keep one head: this revision's owner replaces
the body (and this docstring) with the real schema change. Until then it changes nothing.

Revision ID: 0025
Revises: 0024p
"""

from collections.abc import Sequence

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024p"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
