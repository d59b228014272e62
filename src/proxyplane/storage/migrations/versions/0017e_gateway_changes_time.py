"""gateway_changes.changed_at: when the row was last stamped, from the database clock (unix seconds), so a
node can measure write -> applied lag with the database clock only (issue 17, change-propagation lag).

The existing log triggers are unchanged: PostgreSQL fills the column from its default on insert and a
BEFORE UPDATE trigger on gateway_changes re-stamps it when the upsert gives the key a new seq; SQLite
(ADD COLUMN takes no non-constant default) stamps it with AFTER INSERT / AFTER UPDATE OF seq triggers.

Revision ID: 0017e
Revises: 0016d
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017e"
down_revision: str | Sequence[str] | None = "0016d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_NOW = "extract(epoch from clock_timestamp())::double precision"
SQLITE_NOW = "(julianday('now') - 2440587.5) * 86400.0"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.add_column(
            "gateway_changes",
            sa.Column("changed_at", sa.Float(), nullable=False, server_default=sa.text(PG_NOW)),
        )
        op.execute(
            "CREATE FUNCTION pp_stamp_gateway_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN NEW.changed_at := {PG_NOW}; RETURN NEW; END $$"
        )
        op.execute(
            "CREATE TRIGGER pp_stamp_gateway_change BEFORE UPDATE OF seq ON gateway_changes "
            "FOR EACH ROW EXECUTE FUNCTION pp_stamp_gateway_change()"
        )
        return
    op.add_column("gateway_changes", sa.Column("changed_at", sa.Float(), nullable=False, server_default="0"))
    for event in ("INSERT", "UPDATE OF seq"):
        name = "insert" if event == "INSERT" else "update"
        op.execute(
            f"CREATE TRIGGER pp_stamp_gateway_change_{name} AFTER {event} ON gateway_changes FOR EACH ROW "
            f"BEGIN UPDATE gateway_changes SET changed_at = {SQLITE_NOW} WHERE key = NEW.key; END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER pp_stamp_gateway_change ON gateway_changes")
        op.execute("DROP FUNCTION pp_stamp_gateway_change()")
    else:
        op.execute("DROP TRIGGER pp_stamp_gateway_change_insert")
        op.execute("DROP TRIGGER pp_stamp_gateway_change_update")
    op.drop_column("gateway_changes", "changed_at")  # SQLite >= 3.35: in place (a batch copy trips triggers)
