"""sub-users (issue 18): sticky_sessions.sid widened to 96 characters (a sub-user's session is stored under
its service as sid "<sub-user pk>:<sid>", up to 20 + 1 + 64 characters), and on SQLite service_subusers
recreated with AUTOINCREMENT so that a deleted sub-user's id is never given to a new one (PostgreSQL's
sequence never reuses ids already). The SQLite sequence starts above every id ever used: the highest
existing id and the highest sub-user id found in the usage tables (ids of sub-users deleted before this
migration). Dropping the table drops its change-log triggers (0018b), and renaming the rebuilt table fails
while the whitelist's triggers name a missing table: all five SQLite triggers are dropped first and made
again afterwards, unchanged.

Revision ID: 0019b
Revises: 0018g
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019b"
down_revision: str | Sequence[str] | None = "0018g"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WATCHED = (
    "login, password_enc, enabled, traffic_limit_bytes, traffic_limit_requests, max_connections, "
    "countries, limit_reached"
)
SQLITE_TRIGGER = """
CREATE TRIGGER pp_log_{table}_{op} AFTER {event} ON {table} FOR EACH ROW {when}BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT {expr}, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0 FROM {source}
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""
TRIGGERS = (
    ("subuser_whitelist", "insert"),
    ("subuser_whitelist", "delete"),
    ("service_subusers", "insert"),
    ("service_subusers", "delete"),
    ("service_subusers", "update"),
)


def _sqlite_triggers() -> None:
    """The triggers of 0018b, as they were."""
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in WATCHED.split(", "))
    for op_name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("delete", "DELETE", "OLD"),
        ("update", f"UPDATE OF {WATCHED}", "NEW"),
    ):
        op.execute(
            SQLITE_TRIGGER.format(
                table="service_subusers",
                op=op_name,
                event=event,
                when=f"WHEN {changed} " if op_name == "update" else "",
                expr=f"{row}.service_id",
                source="(SELECT 1) WHERE true",
            )
        )
    for op_name, row in (("insert", "NEW"), ("delete", "OLD")):
        op.execute(
            SQLITE_TRIGGER.format(
                table="subuser_whitelist",
                op=op_name,
                event=op_name.upper(),
                when="",
                expr="s.service_id",
                source=f"service_subusers s WHERE s.id = {row}.subuser_pk",
            )
        )


def _rebuild_subusers(autoincrement: bool) -> None:
    for table, event in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS pp_log_{table}_{event}")
    with op.batch_alter_table(
        "service_subusers", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass
    _sqlite_triggers()


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    with op.batch_alter_table("sticky_sessions") as batch:
        batch.alter_column("sid", type_=sa.String(length=96), existing_type=sa.String(length=64))
    if not sqlite:
        return
    _rebuild_subusers(True)
    high = (
        "SELECT max(m) FROM (SELECT max(id) AS m FROM service_subusers "
        "UNION ALL SELECT max(subuser_pk) FROM subuser_usage_minutes "
        "UNION ALL SELECT max(subuser_pk) FROM subuser_usage_errors)"
    )
    op.execute("DELETE FROM sqlite_sequence WHERE name = 'service_subusers'")
    op.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT 'service_subusers', coalesce(({high}), 0)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_subusers(False)
    op.execute("DELETE FROM sticky_sessions WHERE length(sid) > 64")  # sub-users' sessions
    with op.batch_alter_table("sticky_sessions") as batch:
        batch.alter_column("sid", type_=sa.String(length=64), existing_type=sa.String(length=96))
