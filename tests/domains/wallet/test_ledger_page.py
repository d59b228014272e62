"""Ledger pages by the per-customer sequence number (issue 15.4): every entry gets seq 1, 2, 3, ... in its
customer's ledger whoever writes it (wallet credit/debit, a plain INSERT), existing entries are numbered by
the migration's backfill, and a page at any offset costs two statements (the newest seq, then the range)."""

from __future__ import annotations

import importlib

import pytest
from sqlalchemy import event, insert, select, update

from proxyplane.domains.wallet import service as wallet
from proxyplane.platform import Platform
from proxyplane.storage.models import LedgerEntry
from tests.support import Account, make_account

pytestmark = pytest.mark.anyio


async def _seqs(platform: Platform, customer_id: int) -> list[int | None]:
    async with platform.db.unit_of_work(write=False) as uow:
        q = select(LedgerEntry.seq).where(LedgerEntry.customer_id == customer_id).order_by(LedgerEntry.id)
        return list((await uow.session.execute(q)).scalars())


async def test_seq_numbers_each_ledger_and_pages_in_two_statements(
    platform: Platform, account: Account
) -> None:
    cid = account.customer_id
    other = (await make_account(platform)).customer_id
    for i in range(3):  # the wallet's own writes, interleaved with another customer's
        await account.credit(100 + i)
        async with platform.db.unit_of_work() as uow:
            await wallet.credit(uow.session, other, 5, "adjustment", "other")
            await wallet.debit(uow.session, cid, 7, "purchase", "a purchase")
            await uow.commit()
    async with platform.db.unit_of_work() as uow:  # a plain multi-row insert numbers its rows too
        await uow.session.execute(insert(LedgerEntry), [
            {"customer_id": c, "amount_cents": 1, "balance_after_cents": 1, "kind": "credit"}
            for c in (cid, other, cid, cid)])
        await uow.commit()
    assert await _seqs(platform, cid) == list(range(1, 10))
    assert await _seqs(platform, other) == list(range(1, 5))

    statements: list[str] = []
    engine = platform.db.engine.sync_engine

    def seen(conn, cursor, statement, *args) -> None:  # noqa: ANN001
        statements.append(statement)

    async with platform.db.unit_of_work(write=False) as uow:
        reference = list((await uow.session.execute(
            select(LedgerEntry.id).where(LedgerEntry.customer_id == cid).order_by(LedgerEntry.id.desc())
        )).scalars())
        event.listen(engine, "before_cursor_execute", seen)
        try:
            for offset in range(0, 11):
                statements.clear()
                rows, total = await wallet.ledger(uow.session, cid, offset, 4)
                assert total == 9 and [r.id for r in rows] == reference[offset:offset + 4]
                assert len(statements) == (2 if offset < 9 else 1)
                assert not any("count(" in s.lower() for s in statements)
        finally:
            event.remove(engine, "before_cursor_execute", seen)


async def test_backfill_numbers_existing_entries(platform: Platform, account: Account) -> None:
    for i in range(4):
        await account.credit(10 + i)
    migration = importlib.import_module("proxyplane.storage.migrations.versions.0013b_ledger_seq")
    async with platform.db.unit_of_work() as uow:  # as before the migration: no numbers
        await uow.session.execute(
            update(LedgerEntry).where(LedgerEntry.customer_id == account.customer_id).values(seq=None))
        await (await uow.session.connection()).exec_driver_sql(migration.BACKFILL)
        await uow.commit()
    assert await _seqs(platform, account.customer_id) == [1, 2, 3, 4]
    rows, total = await _page(platform, account.customer_id)
    assert total == 4 and [r.amount_cents for r in rows] == [13, 12]


async def _page(platform: Platform, customer_id: int) -> tuple[list[LedgerEntry], int]:
    async with platform.db.unit_of_work(write=False) as uow:
        return await wallet.ledger(uow.session, customer_id, 0, 2)
