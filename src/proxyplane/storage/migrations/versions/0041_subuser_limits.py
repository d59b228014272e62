"""service_subusers: a sub-user's own max_client_ips / client_ip_policy and speed_limit_bps (issue 32.5,
32.6); the gateway change triggers (0018b, 0019b) watch them too, so every node reloads the service.

Revision ID: 0041
Revises: 0040v
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0041"
down_revision: str | Sequence[str] | None = "0040v"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = (
    "login, password_enc, enabled, traffic_limit_bytes, traffic_limit_requests, max_connections, "
    "countries, limit_reached"
)
NEW = OLD + ", max_client_ips, client_ip_policy, speed_limit_bps"

PG_LOG = """
    INSERT INTO gateway_changes (key, seq, xid)
      SELECT k, nextval('gateway_change_seq'), pg_current_xact_id()::text::bigint
      FROM ({keys}) d
      WHERE NOT EXISTS (SELECT 1 FROM gateway_changes g
                        WHERE g.key = d.k AND g.xid = pg_current_xact_id()::text::bigint)
      ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, xid = excluded.xid;
"""
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION pp_log_service_subusers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN {on_insert}
  ELSIF TG_OP = 'DELETE' THEN {on_delete}
  ELSE {on_update}
  END IF;
  RETURN NULL;  -- no NOTIFY (0020i): the change notifier wakes the nodes
END $$
"""
SQLITE_UPDATE = """
CREATE TRIGGER pp_log_service_subusers_update AFTER UPDATE OF {watched} ON service_subusers FOR EACH ROW
WHEN {changed} BEGIN
  INSERT INTO gateway_changes (key, seq, xid)
    SELECT NEW.service_id, coalesce((SELECT max(seq) FROM gateway_changes), 0) + 1, 0
    FROM (SELECT 1) WHERE true
    ON CONFLICT (key) DO UPDATE SET seq = excluded.seq;
END
"""


def _pg_changed(watched: str) -> str:
    cols = ["service_id", *watched.split(", ")]

    def side(alias: str) -> str:
        return ", ".join(f"{alias}.{c}::text" if c == "countries" else f"{alias}.{c}" for c in cols)

    return (
        "SELECT DISTINCT n.service_id::text AS k FROM new_rows n JOIN old_rows o ON o.id = n.id "
        f"WHERE ({side('n')}) IS DISTINCT FROM ({side('o')})"
    )


def _triggers(watched: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        keys = "SELECT DISTINCT r.service_id::text AS k FROM {rows} r"
        op.execute(
            PG_FUNCTION.format(
                on_insert=PG_LOG.format(keys=keys.format(rows="new_rows")),
                on_delete=PG_LOG.format(keys=keys.format(rows="old_rows")),
                on_update=PG_LOG.format(keys=_pg_changed(watched)),
            )
        )
        return
    op.execute("DROP TRIGGER IF EXISTS pp_log_service_subusers_update")
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in watched.split(", "))
    op.execute(SQLITE_UPDATE.format(watched=watched, changed=changed))


def upgrade() -> None:
    op.add_column("service_subusers", sa.Column("max_client_ips", sa.Integer(), nullable=True))
    op.add_column("service_subusers", sa.Column("client_ip_policy", sa.String(length=12), nullable=True))
    op.add_column("service_subusers", sa.Column("speed_limit_bps", sa.BigInteger(), nullable=True))
    _triggers(NEW)


def downgrade() -> None:
    _triggers(OLD)
    for name in ("speed_limit_bps", "client_ip_policy", "max_client_ips"):
        op.drop_column("service_subusers", name)
