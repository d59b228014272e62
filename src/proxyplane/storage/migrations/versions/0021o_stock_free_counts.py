"""stock_free: free-IP counts of the stock on sale, kept by triggers (issue 15, O(1) availability reads)

An IP is free when `retired_at IS NULL AND assigned_count < capacity`. Every change of stock_ips that
makes an IP free or not free (an order filling it, a cancellation, a retirement, a re-activation, a
capacity change, an import, a delete) writes a signed delta row for its (product_kind, country_maxmind,
country_ripe) in the same transaction, so the counts are exact at every commit whoever writes (the
allocator, raw SQL, an operator). Deltas are INSERTed, never UPDATEd: concurrent orders never wait on
each other's counter row. Readers sum the rows of a pool (domains/stock/free_counts.py); the renewal
job folds them into one row per key.

PostgreSQL: one row-level AFTER UPDATE / DELETE trigger whose WHEN clause lets only changes of the free
state (or of the key of a free IP) reach the function (an order that does not fill an IP costs the WHEN
test only), and a statement-level AFTER INSERT trigger over the transition table (one aggregated row per
import statement or COPY). SQLite: row-level triggers (one writer: no waiting either).

Revision ID: 0021o
Revises: 0020i
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021o"
down_revision: str | Sequence[str] | None = "0020i"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLS = "product_kind, country_maxmind, country_ripe"


def free(row: str) -> str:
    return f"({row}.retired_at IS NULL AND {row}.assigned_count < {row}.capacity)"


def moved(a: str, b: str) -> str:
    """The key of the row changed (pool or a country; all NOT NULL)."""
    return "(" + " OR ".join(f"{a}.{c} <> {b}.{c}" for c in COLS.split(", ")) + ")"


PG_ROW = f"""
CREATE FUNCTION pp_stock_free_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND {free("OLD")} THEN
    INSERT INTO stock_free ({COLS}, free)
    VALUES (OLD.product_kind, OLD.country_maxmind, OLD.country_ripe, -1);
  END IF;
  IF TG_OP = 'UPDATE' AND {free("NEW")} THEN
    INSERT INTO stock_free ({COLS}, free)
    VALUES (NEW.product_kind, NEW.country_maxmind, NEW.country_ripe, 1);
  END IF;
  RETURN NULL;
END $$
"""
PG_INSERT = f"""
CREATE FUNCTION pp_stock_free_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stock_free ({COLS}, free)
  SELECT {COLS}, count(*) FROM pp_new_stock
  WHERE retired_at IS NULL AND assigned_count < capacity GROUP BY {COLS};
  RETURN NULL;
END $$
"""
PG_TRIGGERS = (
    "CREATE TRIGGER pp_stock_free_update AFTER UPDATE ON stock_ips FOR EACH ROW "
    f"WHEN ({free('OLD')} IS DISTINCT FROM {free('NEW')} OR ({free('NEW')} AND {moved('OLD', 'NEW')})) "
    "EXECUTE FUNCTION pp_stock_free_row()",
    f"CREATE TRIGGER pp_stock_free_delete AFTER DELETE ON stock_ips FOR EACH ROW WHEN {free('OLD')} "
    "EXECUTE FUNCTION pp_stock_free_row()",
    "CREATE TRIGGER pp_stock_free_insert AFTER INSERT ON stock_ips REFERENCING NEW TABLE AS pp_new_stock "
    "FOR EACH STATEMENT EXECUTE FUNCTION pp_stock_free_insert()",
)


def _sqlite_delta(row: str, sign: str) -> str:
    return (
        f"INSERT INTO stock_free ({COLS}, free) "
        f"VALUES ({row}.product_kind, {row}.country_maxmind, {row}.country_ripe, {sign}1);"
    )


SQLITE_TRIGGERS = (
    f"CREATE TRIGGER pp_stock_free_insert AFTER INSERT ON stock_ips FOR EACH ROW WHEN {free('NEW')} "
    f"BEGIN {_sqlite_delta('NEW', '')} END",
    f"CREATE TRIGGER pp_stock_free_delete AFTER DELETE ON stock_ips FOR EACH ROW WHEN {free('OLD')} "
    f"BEGIN {_sqlite_delta('OLD', '-')} END",
    f"CREATE TRIGGER pp_stock_free_update_old AFTER UPDATE ON stock_ips FOR EACH ROW "
    f"WHEN {free('OLD')} AND (NOT {free('NEW')} OR {moved('OLD', 'NEW')}) "
    f"BEGIN {_sqlite_delta('OLD', '-')} END",
    f"CREATE TRIGGER pp_stock_free_update_new AFTER UPDATE ON stock_ips FOR EACH ROW "
    f"WHEN {free('NEW')} AND (NOT {free('OLD')} OR {moved('OLD', 'NEW')}) "
    f"BEGIN {_sqlite_delta('NEW', '')} END",
)
TRIGGER_NAMES = ("insert", "delete", "update", "update_old", "update_new")


def upgrade() -> None:
    op.create_table(
        "stock_free",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("product_kind", sa.String(30), nullable=False),
        sa.Column("country_maxmind", sa.String(2), nullable=False),
        sa.Column("country_ripe", sa.String(2), nullable=False),
        sa.Column("free", sa.Integer(), nullable=False),
    )
    op.create_index("ix_stock_free_kind", "stock_free", ["product_kind"])
    op.execute(
        f"INSERT INTO stock_free ({COLS}, free) SELECT {COLS}, count(*) FROM stock_ips "
        f"WHERE retired_at IS NULL AND assigned_count < capacity GROUP BY {COLS}"
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_ROW)
        op.execute(PG_INSERT)
        for ddl in PG_TRIGGERS:
            op.execute(ddl)
    else:
        for ddl in SQLITE_TRIGGERS:
            op.execute(ddl)


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for name in TRIGGER_NAMES:
        op.execute(f"DROP TRIGGER IF EXISTS pp_stock_free_{name}" + (" ON stock_ips" if postgres else ""))
    if postgres:
        op.execute("DROP FUNCTION IF EXISTS pp_stock_free_row()")
        op.execute("DROP FUNCTION IF EXISTS pp_stock_free_insert()")
    op.drop_index("ix_stock_free_kind", table_name="stock_free")
    op.drop_table("stock_free")
