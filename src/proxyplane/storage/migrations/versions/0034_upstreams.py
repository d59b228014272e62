"""issue 36.4: upstreams (proxy suppliers a rotating product chains through) and upstream_usage (bytes
relayed through each per UTC hour: the cost side of the margin report)

Revision ID: 0034
Revises: 0032
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from proxyplane.storage.types import UTCDateTime

revision: str = "0034"
down_revision: str | Sequence[str] | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "upstreams",
        sa.Column("upstream_id", sa.Uuid(), nullable=False),
        sa.Column("pool", sa.String(40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("scheme", sa.String(10), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(255), nullable=False),
        sa.Column("password_enc", sa.String(1000), nullable=False),
        sa.Column("template", sa.String(300), nullable=False),
        sa.Column("cost_per_gb_cents", sa.BigInteger(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("check_target", sa.String(300), nullable=False),
        sa.Column("health", sa.String(10), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.Column("check_error", sa.String(300), nullable=False),
        sa.Column("check_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("upstream_id", name=op.f("pk_upstreams")),
        sa.UniqueConstraint("pool", "position", name="uq_upstreams_pool_position"),
    )
    op.create_index("ix_upstreams_pool", "upstreams", ["pool"])
    op.create_table(
        "upstream_usage",
        sa.Column("upstream_id", sa.Uuid(), nullable=False),
        sa.Column("hour", UTCDateTime(), nullable=False),
        sa.Column("bytes_up", sa.BigInteger(), nullable=False),
        sa.Column("bytes_down", sa.BigInteger(), nullable=False),
        sa.Column("tunnels", sa.BigInteger(), nullable=False),
        sa.Column("failures", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["upstream_id"], ["upstreams.upstream_id"], name=op.f("fk_upstream_usage_upstream_id_upstreams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("upstream_id", "hour", name=op.f("pk_upstream_usage")),
    )


def downgrade() -> None:
    op.drop_table("upstream_usage")
    op.drop_index("ix_upstreams_pool", table_name="upstreams")
    op.drop_table("upstreams")
