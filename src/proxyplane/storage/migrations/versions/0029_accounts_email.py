"""issue 34: the email outbox, emailed single-use links, TOTP two-factor, recovery codes, app passwords,
per-customer email notification choices; accounts that existed before count as verified

Also an index on events (created_at) for the notification pass (jobs/mail_pass.py reads the newest events
of the notified types): BRIN on PostgreSQL (the events arrive in created_at order; an append costs next to
nothing and the unsummarised newest pages are always read), a b-tree on SQLite.

Revision ID: 0029
Revises: 0028
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0029"
down_revision: str | Sequence[str] | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _customer(nullable: bool = False) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        "customer_id", sa.Integer(), sa.ForeignKey("customers.id", ondelete="CASCADE"), nullable=nullable
    )


def upgrade() -> None:
    op.create_table(
        "email_outbox",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        _customer(nullable=True),
        sa.Column("to_address", sa.String(320), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("text_body", sa.Text(), nullable=False),
        sa.Column("html_body", sa.Text(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.Column("dedupe_key", sa.String(200), nullable=True, unique=True),
        sa.Column("message_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=False),
        sa.Column("locked_by", sa.String(100), nullable=True),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.String(1000), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("sent_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_email_outbox_due", "email_outbox", ["status", "next_attempt_at"])
    op.create_index("ix_email_outbox_customer_id", "email_outbox", ["customer_id"])
    cursors = op.create_table(
        "mail_cursors",
        sa.Column("name", sa.String(40), primary_key=True),
        sa.Column("position", UTCDateTime(), nullable=False),
    )
    # the notification pass mails events from now on, not the history before this revision
    op.bulk_insert(cursors, [{"name": "events", "position": datetime.now(UTC)}])
    op.create_table(
        "account_tokens",
        sa.Column("id", sa.String(64), primary_key=True),
        _customer(),
        sa.Column("purpose", sa.String(20), nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_account_tokens_customer_id", "account_tokens", ["customer_id"])
    op.create_table(
        "customer_two_factor",
        sa.Column(
            "customer_id", sa.Integer(), sa.ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("secret_encrypted", sa.String(500), nullable=False),
        sa.Column("enabled_at", UTCDateTime(), nullable=True),
        sa.Column("last_step", sa.BigInteger(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "customer_recovery_codes",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        _customer(),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("customer_id", "code_hash", name="uq_recovery_codes_customer_hash"),
    )
    op.create_table(
        "app_passwords",
        sa.Column("id", sa.Uuid(), primary_key=True),
        _customer(),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_app_passwords_customer_id", "app_passwords", ["customer_id"])
    op.add_column("notification_settings", sa.Column("email_off", sa.JSON(), nullable=True))
    op.create_index("ix_events_created", "events", ["created_at"], postgresql_using="brin")
    # accounts made before verification existed keep buying: their address counts as verified
    op.execute("UPDATE customers SET email_verified_at = created_at WHERE email_verified_at IS NULL")


def downgrade() -> None:
    op.drop_index("ix_events_created", table_name="events")
    with op.batch_alter_table("notification_settings") as batch:
        batch.drop_column("email_off")
    op.drop_table("app_passwords")
    op.drop_table("customer_recovery_codes")
    op.drop_table("customer_two_factor")
    op.drop_table("account_tokens")
    op.drop_table("mail_cursors")
    op.drop_table("email_outbox")
