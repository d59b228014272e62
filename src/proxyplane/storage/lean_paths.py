"""Every lean form of storage/ (issue 31), its plain twin, the switch that chooses between them and the test
that covers it: the source of docs/architecture.md's lean-path table (scripts/lean_table.py --write).
tests/test_lean_table.py checks that each named object and test exists and that the doc is this list.

With PROXYPLANE_LEAN_STORAGE=0 (storage/lean_setting.py) every switch below picks the plain twin, so a
PostgreSQL run with it off (scripts/test.sh, after the engine runs) checks each lean form against it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LeanPath:
    name: str
    lean: str  # module:attribute of the lean form
    plain: str  # module:attribute of its plain twin
    switch: str  # module:attribute that chooses
    test: str  # tests/<file>.py::<test>
    note: str = ""


_S = "proxyplane.storage."
PATHS: tuple[LeanPath, ...] = (
    LeanPath(
        "An order paid in full: one PostgreSQL statement (debit, service, whitelist, IPs, records)",
        _S + "repos.orders:paid_in_full",
        "proxyplane.domains.orders.service:place_order",
        _S + "repos.orders:available",
        "tests/domains/orders/test_statement_count.py::test_order_statements_do_not_grow_with_its_ip_count",
        "plain: the general path of place_order (wallet, insert_service, take_ips, rows.record)",
    ),
    LeanPath(
        "An order's invoice, ledger entry and events in one statement",
        _S + "repos.orders:record_order",
        "proxyplane.domains.orders.rows:record",
        _S + "repos.orders:available",
        "tests/domains/orders/test_order_records.py::test_invoice_ledger_and_events_of_a_paid_order",
    ),
    LeanPath(
        "The service row and its whitelist in one INSERT",
        _S + "repos.services:service_ctes",
        _S + "repos.services:insert_service",
        _S + "engine_choice:lean",
        "tests/domains/orders/test_order_records.py::test_invoice_ledger_and_events_of_a_paid_order",
        "plain: insert_service's two statements",
    ),
    LeanPath(
        "The allocation and its service_ips rows in one statement",
        _S + "repos.stock:take_ips_cte",
        _S + "repos.stock:take_ips",
        _S + "engine_choice:lean",
        "tests/domains/stock/test_pick_once.py::test_an_allocation_takes_what_it_asks_and_its_picks_run_once",
        "plain: take_ips's UPDATE, then one executemany",
    ),
    LeanPath(
        "Driver statements (compiled once, run on the driver connection)",
        _S + "driver:DriverStatement",
        "sqlalchemy.ext.asyncio:AsyncSession",
        _S + "lean_setting:LEAN",
        "tests/storage/test_driver.py::test_driver_statements_share_the_transaction_and_the_listeners",
        "plain: session.execute of the same Core statement",
    ),
    LeanPath(
        "The lean session (a connection until the ORM is needed)",
        _S + "driver:LeanSession",
        "sqlalchemy.ext.asyncio:AsyncSession",
        _S + "engine:Database.unit_of_work",
        "tests/storage/test_lean_session.py::test_an_error_or_no_commit_rolls_everything_back",
    ),
    LeanPath(
        "BEGIN with the first statement, COMMIT with the last (one round trip each)",
        _S + "transaction:begin_with",
        _S + "engine:UnitOfWork.commit_with",
        _S + "lean_setting:LEAN",
        "tests/storage/test_transaction.py::test_an_error_after_begin_with_rolls_everything_back",
        "plain: the statement, then the unit of work's commit",
    ),
    LeanPath(
        "COMMIT on the driver connection",
        _S + "transaction:commit",
        "sqlalchemy.ext.asyncio:AsyncSession.commit",
        _S + "lean_setting:LEAN",
        "tests/storage/test_transaction.py::test_commit_flushes_pending_orm_changes",
    ),
    LeanPath(
        "SQLite statements on the event loop's thread once they cannot wait",
        _S + "sqlite_driver:dbapi",
        "sqlalchemy.dialects.sqlite.aiosqlite:AsyncAdapt_aiosqlite_dbapi",
        _S + "engine:Database",
        "tests/storage/test_sqlite_driver.py::test_concurrent_writers_on_one_loop_keep_every_increment",
        "plain: aiosqlite as SQLAlchemy drives it",
    ),
    LeanPath(
        "A bulk import's new range COPYed straight into stock_ips",
        _S + "repos.stock_import:_copy_if_new",
        _S + "repos.stock_import:import_chunks",
        _S + "repos.stock_import:import_chunks",
        "tests/domains/stock/test_bulk.py::test_duplicates_skipped_and_retired_reactivated",
        "PostgreSQL only, not switched (COPY has no SQL twin); the staging path is its fallback and SQLite's",
    ),
)
