"""team accounts: team_members, team_invitations, account_activity; web_sessions.member_id and
api_keys.member_id (issue 34.5)

Revision ID: 0032
Revises: 0035
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0032"
down_revision: str | Sequence[str] | None = "0035"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _customer_fk(column: str, table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], ["customers.id"], name=op.f(f"fk_{table}_{column}_customers"), ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "team_members",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("person_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("invited_by", sa.String(length=320), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("removed_at", UTCDateTime(timezone=True), nullable=True),
        _customer_fk("account_id", "team_members"),
        _customer_fk("person_id", "team_members"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_members")),
        sa.UniqueConstraint("account_id", "person_id", name=op.f("uq_team_members_account_id")),
    )
    op.create_index("ix_team_members_account_id", "team_members", ["account_id"])
    op.create_index("ix_team_members_person_id", "team_members", ["person_id"])
    op.create_table(
        "team_invitations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("invited_by", sa.String(length=320), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("accepted_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", UTCDateTime(timezone=True), nullable=True),
        _customer_fk("account_id", "team_invitations"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_team_invitations")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_team_invitations_token_hash")),
    )
    op.create_index("ix_team_invitations_account_id", "team_invitations", ["account_id"])
    op.create_table(
        "account_activity",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("account_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=80), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("channel", sa.String(length=20), nullable=False),
        sa.Column("client_ip", sa.String(length=45), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        _customer_fk("account_id", "account_activity"),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["team_members.id"],
            name=op.f("fk_account_activity_member_id_team_members"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_account_activity")),
    )
    op.create_index("ix_account_activity_account_created", "account_activity", ["account_id", "created_at"])
    op.add_column("web_sessions", sa.Column("member_id", sa.Integer(), nullable=True))
    op.add_column("api_keys", sa.Column("member_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_keys") as batch:
        batch.drop_column("member_id")
    with op.batch_alter_table("web_sessions") as batch:
        batch.drop_column("member_id")
    op.drop_index("ix_account_activity_account_created", table_name="account_activity")
    op.drop_table("account_activity")
    op.drop_index("ix_team_invitations_account_id", table_name="team_invitations")
    op.drop_table("team_invitations")
    op.drop_index("ix_team_members_person_id", table_name="team_members")
    op.drop_index("ix_team_members_account_id", table_name="team_members")
    op.drop_table("team_members")
