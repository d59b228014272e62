"""Two indexes no query reads are dropped (issue 15): one index entry less per row an order writes, one
index less opened and locked per order statement. Both engines.

- service_whitelist (service_id): uq_service_whitelist_service_ip (service_id, ip) has the same leading
  column and serves every lookup by service (as 0022p did for service_ips, services and ledger_entries).
- services (updated_at): the gateway's change marker before the change log (0012c); nothing reads the
  column by range since. Without it an UPDATE of a service (which always sets updated_at) can be HOT.

Revision ID: 0023p
Revises: 0022p
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023p"
down_revision: str | Sequence[str] | None = "0022p"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNUSED = (
    ("ix_service_whitelist_service_id", "service_whitelist", "service_id"),
    ("ix_services_updated_at", "services", "updated_at"),
)


def upgrade() -> None:
    for name, table, _column in UNUSED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in UNUSED:
        op.create_index(name, table, [column])
