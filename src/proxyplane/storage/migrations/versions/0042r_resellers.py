"""issue 33.4: resellers (discount, guarded balance), the customers bound to them, their append-only ledger

Revision ID: 0042r
Revises: 0041
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0042r"
down_revision: str | Sequence[str] | None = "0041"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PG_FUNCTION = """
CREATE FUNCTION reseller_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'reseller_ledger is append-only';
END $$
"""


def upgrade() -> None:
    op.create_table(
        "resellers",
        sa.Column(
            "operator_id",
            sa.BigInteger(),
            sa.ForeignKey("operators.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("discount_percent", sa.Integer(), nullable=False),
        sa.Column("balance_cents", sa.BigInteger(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("balance_cents >= 0", name="reseller_non_negative"),
        sa.CheckConstraint("discount_percent >= 0 AND discount_percent <= 90", name="reseller_discount"),
    )
    op.create_table(
        "reseller_customers",
        sa.Column(
            "customer_id", sa.Integer(), sa.ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column(
            "operator_id",
            sa.BigInteger(),
            sa.ForeignKey("resellers.operator_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_reseller_customers_operator_id", "reseller_customers", ["operator_id"])
    op.create_table(
        "reseller_ledger",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        sa.Column(
            "operator_id",
            sa.BigInteger(),
            sa.ForeignKey("resellers.operator_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("balance_after_cents", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=True),
        sa.Column("face_cents", sa.BigInteger(), nullable=True),
        sa.Column("description", sa.String(500), nullable=False),
        sa.Column("reference", sa.String(200), nullable=True, unique=True),
        sa.Column("actor", sa.String(320), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_reseller_ledger_operator_id", "reseller_ledger", ["operator_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER reseller_ledger_append_only BEFORE UPDATE OR DELETE ON reseller_ledger "
            "FOR EACH ROW EXECUTE FUNCTION reseller_ledger_append_only()"
        )
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER reseller_ledger_no_{event.lower()} BEFORE {event} ON reseller_ledger "
                "BEGIN SELECT RAISE(ABORT, 'reseller_ledger is append-only'); END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS reseller_ledger_append_only ON reseller_ledger")
        op.execute("DROP FUNCTION IF EXISTS reseller_ledger_append_only()")
    for table in ("reseller_ledger", "reseller_customers", "resellers"):
        op.drop_table(table)
