"""issue 30 (shared password and sign-up throttles)

Reserved in the chain so that engineers working in parallel keep one head: this revision's owner replaces
the body (and this docstring) with the real schema change. Until then it changes nothing.

Revision ID: 0026
Revises: 0025
"""

from collections.abc import Sequence

revision: str = "0026"
down_revision: str | Sequence[str] | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
