"""issue 33: operator accounts, console sessions, operator API keys, the audit log

The audit log is append-only on both engines: a trigger refuses every UPDATE and DELETE of its rows.

Revision ID: 0028
Revises: 0027
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import BigIntPK, UTCDateTime

revision: str = "0028"
down_revision: str | Sequence[str] | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PG_FUNCTION = """
CREATE FUNCTION operator_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operator_audit is append-only';
END $$
"""


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        sa.Column("email", sa.String(320), nullable=False, unique=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False, server_default="active"),
        sa.Column("password_hash", sa.String(300), nullable=False),
        sa.Column("one_time_password", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("totp_secret", sa.Text(), nullable=True),
        sa.Column("totp_last_step", sa.BigInteger(), nullable=True),
        sa.Column("recovery_hashes", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "operator_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "operator_id", sa.BigInteger(), sa.ForeignKey("operators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("stage", sa.String(10), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("pending_secret", sa.Text(), nullable=True),
        sa.Column("client_ip", sa.String(45), nullable=False),
        sa.Column("user_agent", sa.String(300), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_operator_sessions_operator_id", "operator_sessions", ["operator_id"])
    op.create_table(
        "operator_api_keys",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        sa.Column(
            "operator_id", sa.BigInteger(), sa.ForeignKey("operators.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_operator_api_keys_operator_id", "operator_api_keys", ["operator_id"])
    op.create_table(
        "operator_audit",
        sa.Column("id", BigIntPK, primary_key=True, autoincrement=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("operator_id", sa.BigInteger(), nullable=True),
        sa.Column("actor", sa.String(320), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("door", sa.String(20), nullable=False),
        sa.Column("action", sa.String(80), nullable=False),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.Column("client_ip", sa.String(45), nullable=False),
        sa.Column("form_key", sa.String(200), nullable=True, unique=True),
    )
    for column in ("at", "actor", "action", "target"):
        op.create_index(f"ix_operator_audit_{column}", "operator_audit", [column])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER operator_audit_append_only BEFORE UPDATE OR DELETE ON operator_audit "
            "FOR EACH ROW EXECUTE FUNCTION operator_audit_append_only()"
        )
    else:
        for event in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER operator_audit_no_{event.lower()} BEFORE {event} ON operator_audit "
                "BEGIN SELECT RAISE(ABORT, 'operator_audit is append-only'); END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS operator_audit_append_only ON operator_audit")
        op.execute("DROP FUNCTION IF EXISTS operator_audit_append_only()")
    for table in ("operator_audit", "operator_api_keys", "operator_sessions"):
        op.drop_table(table)
    op.drop_table("operators")
