"""service_ips' references checked once per statement on PostgreSQL (issue 15)

An order of n IPs inserts n service_ips rows, and each row ran two foreign-key checks (RI triggers, one
`SELECT 1 ... FOR KEY SHARE` each): 2n of an order's ~29 checks, each locking again a stock row the same
statement had just updated (one more WAL record per IP) and the service row the same statement had just
inserted (measured in a server-side loop: the 20 checks of a 10-IP order ~130 us, the one check per
statement below ~60 us). PostgreSQL has no statement-level foreign key, so on PostgreSQL the two
constraints become triggers with the same guarantees:

- child side, one statement-level AFTER INSERT trigger (the statement's new rows as a transition table):
  every ip_id is a stock_ips id and every service_id a services row, else `foreign_key_violation`; the
  services rows are locked `FOR KEY SHARE` as the foreign key did (one row per order), so a concurrent
  delete of the service waits for the inserting transaction and then cascades to its rows. The stock rows
  are not locked again: every writer of service_ips (stock/allocate.take, orders/paid_in_full) inserts
  rows for stock rows the same statement updates (row-locked until commit), and the stock side's check
  below runs after any delete has waited for that lock. An UPDATE that sets service_id or ip_id is checked
  by a row-level trigger (no writer does; an UPDATE of released_at does not reach it).
- parent side: deleting or re-keying a stock_ips row still referenced is refused (`foreign_key_violation`,
  the constraint's NO ACTION), checked once per statement; deleting services deletes their service_ips
  rows (the constraint's ON DELETE CASCADE: also through a customer's cascade), one statement per
  statement; re-keying a referenced service is refused.

SQLite keeps both constraints (its checks are cheap index probes in-process). The models still declare
the foreign keys (the ORM's joins and SQLite's schema).

Revision ID: 0024p
Revises: 0023p
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0024p"
down_revision: str | Sequence[str] | None = "0023p"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VIOLATION = "USING ERRCODE = 'foreign_key_violation'"
TO_STOCK = "'service_ips.ip_id references no stock_ips row (fk_service_ips_ip_id_stock_ips)'"
TO_SERVICE = "'service_ips.service_id references no services row (fk_service_ips_service_id_services)'"
STOCK_HELD = "'stock_ips row still referenced from service_ips (fk_service_ips_ip_id_stock_ips)'"
SERVICE_HELD = "'services row still referenced from service_ips (fk_service_ips_service_id_services)'"
FUNCTIONS = (
    f"""
CREATE FUNCTION pp_service_ips_refs_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  wanted integer;
  locked integer;
  bad bigint;
BEGIN
  SELECT n.ip_id INTO bad FROM pp_new_service_ips n
    WHERE NOT EXISTS (SELECT 1 FROM stock_ips s WHERE s.id = n.ip_id) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION {TO_STOCK} {VIOLATION}, DETAIL = format('Key (ip_id)=(%s) is not present.', bad);
  END IF;
  SELECT count(DISTINCT n.service_id) INTO wanted FROM pp_new_service_ips n;
  SELECT count(*) INTO locked FROM (SELECT 1 FROM services v
    WHERE v.service_id IN (SELECT n.service_id FROM pp_new_service_ips n) FOR KEY SHARE OF v) l;
  IF locked <> wanted THEN
    RAISE EXCEPTION {TO_SERVICE} {VIOLATION};
  END IF;
  RETURN NULL;
END $$
""",
    f"""
CREATE FUNCTION pp_service_ips_refs_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM stock_ips s WHERE s.id = NEW.ip_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION {TO_STOCK} {VIOLATION};
  END IF;
  PERFORM 1 FROM services v WHERE v.service_id = NEW.service_id FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION {TO_SERVICE} {VIOLATION};
  END IF;
  RETURN NULL;
END $$
""",
    f"""
CREATE FUNCTION pp_stock_ips_still_referenced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad bigint;
BEGIN
  IF TG_LEVEL = 'ROW' THEN
    SELECT s.ip_id INTO bad FROM service_ips s WHERE s.ip_id = OLD.id LIMIT 1;
  ELSE
    SELECT s.ip_id INTO bad FROM pp_old_stock o JOIN service_ips s ON s.ip_id = o.id LIMIT 1;
  END IF;
  IF FOUND THEN
    RAISE EXCEPTION {STOCK_HELD} {VIOLATION},
      DETAIL = format('Key (id)=(%s) is still referenced from table "service_ips".', bad);
  END IF;
  RETURN NULL;
END $$
""",
    f"""
CREATE FUNCTION pp_services_ips_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'ROW' THEN
    IF EXISTS (SELECT 1 FROM service_ips s WHERE s.service_id = OLD.service_id) THEN
      RAISE EXCEPTION {SERVICE_HELD} {VIOLATION};
    END IF;
  ELSE
    DELETE FROM service_ips s USING pp_old_services o WHERE s.service_id = o.service_id;
  END IF;
  RETURN NULL;
END $$
""",
)
TRIGGERS = (
    "CREATE TRIGGER pp_service_ips_refs_insert AFTER INSERT ON service_ips "
    "REFERENCING NEW TABLE AS pp_new_service_ips FOR EACH STATEMENT "
    "EXECUTE FUNCTION pp_service_ips_refs_insert()",
    "CREATE TRIGGER pp_service_ips_refs_update AFTER UPDATE OF service_id, ip_id ON service_ips "
    "FOR EACH ROW WHEN (OLD.service_id IS DISTINCT FROM NEW.service_id OR OLD.ip_id IS DISTINCT FROM "
    "NEW.ip_id) EXECUTE FUNCTION pp_service_ips_refs_update()",
    "CREATE TRIGGER pp_stock_ips_referenced_delete AFTER DELETE ON stock_ips "
    "REFERENCING OLD TABLE AS pp_old_stock FOR EACH STATEMENT "
    "EXECUTE FUNCTION pp_stock_ips_still_referenced()",
    "CREATE TRIGGER pp_stock_ips_referenced_update AFTER UPDATE OF id ON stock_ips "
    "FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION pp_stock_ips_still_referenced()",
    "CREATE TRIGGER pp_services_ips_cascade AFTER DELETE ON services "
    "REFERENCING OLD TABLE AS pp_old_services FOR EACH STATEMENT EXECUTE FUNCTION pp_services_ips_cascade()",
    "CREATE TRIGGER pp_services_ips_rekey AFTER UPDATE OF service_id ON services "
    "FOR EACH ROW WHEN (OLD.service_id IS DISTINCT FROM NEW.service_id) "
    "EXECUTE FUNCTION pp_services_ips_cascade()",
)
DROPPED = (
    ("pp_service_ips_refs_insert", "service_ips"),
    ("pp_service_ips_refs_update", "service_ips"),
    ("pp_stock_ips_referenced_delete", "stock_ips"),
    ("pp_stock_ips_referenced_update", "stock_ips"),
    ("pp_services_ips_cascade", "services"),
    ("pp_services_ips_rekey", "services"),
)
FUNCTION_NAMES = (
    "pp_service_ips_refs_insert",
    "pp_service_ips_refs_update",
    "pp_stock_ips_still_referenced",
    "pp_services_ips_cascade",
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_constraint("fk_service_ips_ip_id_stock_ips", "service_ips", type_="foreignkey")
    op.drop_constraint("fk_service_ips_service_id_services", "service_ips", type_="foreignkey")
    for ddl in FUNCTIONS + TRIGGERS:
        op.execute(ddl)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, table in DROPPED:
        op.execute(f"DROP TRIGGER {name} ON {table}")
    for name in FUNCTION_NAMES:
        op.execute(f"DROP FUNCTION {name}()")
    op.create_foreign_key("fk_service_ips_ip_id_stock_ips", "service_ips", "stock_ips", ["ip_id"], ["id"])
    op.create_foreign_key(
        "fk_service_ips_service_id_services",
        "service_ips",
        "services",
        ["service_id"],
        ["service_id"],
        ondelete="CASCADE",
    )
