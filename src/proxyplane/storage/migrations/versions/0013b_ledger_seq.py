"""ledger_entries.seq: the entry's number within its customer's ledger (1, 2, 3, ... in id order), so a
page of the ledger at any offset is a range of seq on (customer_id, seq) and the total is the newest
entry's seq (no count over the customer's entries).

Filled for existing rows here, and for every new row by a trigger (any writer: the wallet, raw SQL, an
operator): seq = the customer's largest seq + 1, read on the unique index. Every ledger insert follows the
UPDATE of the customer's wallet row in the same transaction (wallet/service.py: the balance guard), which
serializes a customer's inserts on PostgreSQL; SQLite has one writer. The unique index would refuse a
duplicate rather than let a page skip or repeat an entry.

Also drops the stock indexes (product_kind, country_maxmind) and (product_kind, country_ripe): every query
of the stock on sale is served by the allocation indexes of 0012d (same leading columns, over the unretired
IPs), and two fewer indexes to maintain make a bulk import about a third faster (issue 15.2).

Revision ID: 0013b
Revises: 0012d
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013b"
down_revision: str | Sequence[str] | None = "0012d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_FUNCTION = """
CREATE FUNCTION pp_ledger_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.seq IS NULL THEN
    NEW.seq := coalesce((SELECT max(seq) FROM ledger_entries WHERE customer_id = NEW.customer_id), 0) + 1;
  END IF;
  RETURN NEW;
END $$
"""
SQLITE_TRIGGER = """
CREATE TRIGGER pp_ledger_seq AFTER INSERT ON ledger_entries FOR EACH ROW WHEN NEW.seq IS NULL BEGIN
  UPDATE ledger_entries SET seq = coalesce(
    (SELECT max(seq) FROM ledger_entries WHERE customer_id = NEW.customer_id), 0) + 1
  WHERE id = NEW.id;
END
"""
BACKFILL = """
UPDATE ledger_entries SET seq = n.seq
FROM (SELECT id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS seq FROM ledger_entries) n
WHERE ledger_entries.id = n.id
"""


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.add_column("ledger_entries", sa.Column("seq", sa.BigInteger(), nullable=True))
    op.execute(BACKFILL)  # SQLite >= 3.33 has UPDATE ... FROM
    op.create_index("ix_ledger_entries_customer_seq", "ledger_entries", ["customer_id", "seq"], unique=True)
    op.drop_index("ix_stock_ips_pool_maxmind", table_name="stock_ips")
    op.drop_index("ix_stock_ips_pool_ripe", table_name="stock_ips")
    if postgres:
        op.execute(PG_FUNCTION)
        op.execute(
            "CREATE TRIGGER pp_ledger_seq BEFORE INSERT ON ledger_entries FOR EACH ROW "
            "EXECUTE FUNCTION pp_ledger_seq()"
        )
    else:
        op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    op.create_index("ix_stock_ips_pool_maxmind", "stock_ips", ["product_kind", "country_maxmind"])
    op.create_index("ix_stock_ips_pool_ripe", "stock_ips", ["product_kind", "country_ripe"])
    op.execute("DROP TRIGGER IF EXISTS pp_ledger_seq" + (
        " ON ledger_entries" if op.get_bind().dialect.name == "postgresql" else ""))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS pp_ledger_seq()")
    op.drop_index("ix_ledger_entries_customer_seq", table_name="ledger_entries")
    op.drop_column("ledger_entries", "seq")
