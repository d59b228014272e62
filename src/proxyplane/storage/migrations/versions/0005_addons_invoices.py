"""add-ons, invoices (items, credit notes), IP refreshes, renewal claims

Revision ID: 0005
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _service_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["service_id"],
        ["services.service_id"],
        name=op.f(f"fk_{table}_service_id_services"),
        ondelete="CASCADE",
    )


def _customer_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["customer_id"], ["customers.id"], name=op.f(f"fk_{table}_customer_id_customers"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "service_addons",
        sa.Column("addon_id", sa.Uuid(), nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=False),
        sa.Column("purchase_price_cents", sa.BigInteger(), nullable=False),
        sa.Column("monthly_cents", sa.BigInteger(), nullable=False),
        sa.Column("paid_cents", sa.BigInteger(), nullable=False),
        sa.Column("period_start", UTCDateTime(timezone=True), nullable=False),
        sa.Column("period_end", UTCDateTime(timezone=True), nullable=False),
        sa.Column("activated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("canceled_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("refunded_cents", sa.BigInteger(), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=True),
        _service_fk("service_addons"),
        _customer_fk("service_addons"),
        sa.PrimaryKeyConstraint("addon_id", name=op.f("pk_service_addons")),
    )
    op.create_index(op.f("ix_service_addons_service_id"), "service_addons", ["service_id"])
    op.create_index(op.f("ix_service_addons_customer_id"), "service_addons", ["customer_id"])
    op.create_index(
        "uq_service_addons_active_kind",
        "service_addons",
        ["service_id", "kind"],
        unique=True,
        sqlite_where=sa.text("status = 'active'"),
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_table(
        "invoices",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("total_cents", sa.BigInteger(), nullable=False),
        sa.Column("refunded_cents", sa.BigInteger(), nullable=False),
        sa.Column("payment_method", sa.String(length=40), nullable=False),
        sa.Column("deposit_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("paid_at", UTCDateTime(timezone=True), nullable=True),
        _customer_fk("invoices"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invoices")),
    )
    op.create_index("ix_invoices_customer_id_desc", "invoices", ["customer_id", "id"])
    op.create_index(op.f("ix_invoices_service_id"), "invoices", ["service_id"])
    op.create_index(op.f("ix_invoices_deposit_id"), "invoices", ["deposit_id"])
    for table in ("invoice_items", "invoice_credit_notes"):
        extra = (
            [
                sa.Column("quantity", sa.Integer(), nullable=False),
                sa.Column("unit_price_cents", sa.BigInteger(), nullable=False),
            ]
            if table == "invoice_items"
            else [sa.Column("created_at", UTCDateTime(timezone=True), nullable=False)]
        )
        op.create_table(
            table,
            sa.Column("id", BigIntPK, autoincrement=True, nullable=False),
            sa.Column("invoice_id", sa.Integer(), nullable=False),
            sa.Column("description", sa.String(length=300), nullable=False),
            sa.Column("amount_cents", sa.BigInteger(), nullable=False),
            *extra,
            sa.ForeignKeyConstraint(
                ["invoice_id"],
                ["invoices.id"],
                name=op.f(f"fk_{table}_invoice_id_invoices"),
                ondelete="CASCADE",
            ),
            sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        )
        op.create_index(op.f(f"ix_{table}_invoice_id"), table, ["invoice_id"])
    op.create_table(
        "service_refreshes",
        sa.Column("id", BigIntPK, autoincrement=True, nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("free_window", sa.Integer(), nullable=True),
        sa.Column("replaced", sa.JSON(), nullable=False),
        sa.Column("charged_cents", sa.BigInteger(), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        _service_fk("service_refreshes"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_refreshes")),
        sa.UniqueConstraint("service_id", "free_window", name="uq_service_refreshes_free_window"),
    )
    op.create_index(op.f("ix_service_refreshes_service_id"), "service_refreshes", ["service_id"])
    op.create_table(
        "renewal_claims",
        sa.Column("id", BigIntPK, autoincrement=True, nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=False),
        sa.Column("term_end", UTCDateTime(timezone=True), nullable=False),
        sa.Column("charged_cents", sa.BigInteger(), nullable=False),
        sa.Column("invoice_id", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        _service_fk("renewal_claims"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_renewal_claims")),
        sa.UniqueConstraint("service_id", "term_end", name="uq_renewal_claims_service_term"),
    )
    op.create_index(op.f("ix_renewal_claims_service_id"), "renewal_claims", ["service_id"])


def downgrade() -> None:
    for table in (
        "renewal_claims",
        "service_refreshes",
        "invoice_credit_notes",
        "invoice_items",
        "invoices",
        "service_addons",
    ):
        op.drop_table(table)
