"""events, webhook endpoints and deliveries (outbox), notification settings, support tickets

Revision ID: 0003
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _customer_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["customer_id"], ["customers.id"], name=f"fk_{table}_customer_id_customers", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=60), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        _customer_fk("events"),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
    )
    op.create_index("ix_events_customer_created", "events", ["customer_id", "created_at"])
    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("description", sa.String(length=200), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("secret_encrypted", sa.String(length=500), nullable=False),
        sa.Column("previous_secret_encrypted", sa.String(length=500), nullable=True),
        sa.Column("previous_secret_expires_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=200), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("failing_since", UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        _customer_fk("webhook_endpoints"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_endpoints"),
    )
    op.create_index("ix_webhook_endpoints_customer_id", "webhook_endpoints", ["customer_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", BigIntPK, autoincrement=True, nullable=False),
        sa.Column("public_id", sa.Uuid(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("endpoint_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("locked_by", sa.String(length=100), nullable=True),
        sa.Column("locked_until", UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_attempt_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.String(length=1000), nullable=True),
        sa.Column("error", sa.String(length=500), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("completed_at", UTCDateTime(timezone=True), nullable=True),
        _customer_fk("webhook_deliveries"),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name="fk_webhook_deliveries_endpoint_id_webhook_endpoints",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name="fk_webhook_deliveries_event_id_events", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
        sa.UniqueConstraint("public_id", name="uq_webhook_deliveries_public_id"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_endpoint", "webhook_deliveries", ["endpoint_id", "id"])
    op.create_index("ix_webhook_deliveries_event_id", "webhook_deliveries", ["event_id"])
    op.create_table(
        "notification_settings",
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("balance_low_threshold_cents", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        _customer_fk("notification_settings"),
        sa.PrimaryKeyConstraint("customer_id", name="pk_notification_settings"),
    )
    op.create_table(
        "tickets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("service_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("closed_at", UTCDateTime(timezone=True), nullable=True),
        _customer_fk("tickets"),
        sa.PrimaryKeyConstraint("id", name="pk_tickets"),
    )
    op.create_index("ix_tickets_customer_id", "tickets", ["customer_id"])
    op.create_table(
        "ticket_messages",
        sa.Column("id", BigIntPK, autoincrement=True, nullable=False),
        sa.Column("ticket_id", sa.Uuid(), nullable=False),
        sa.Column("author", sa.String(length=20), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["ticket_id"], ["tickets.id"], name="fk_ticket_messages_ticket_id_tickets", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_ticket_messages"),
    )
    op.create_index("ix_ticket_messages_ticket_id", "ticket_messages", ["ticket_id"])


def downgrade() -> None:
    for table in (
        "ticket_messages",
        "tickets",
        "notification_settings",
        "webhook_deliveries",
        "webhook_endpoints",
        "events",
    ):
        op.drop_table(table)
