"""storage/transaction.py (issue 15): the unit of work's BEGIN sent with its first statement and its COMMIT
with its last (PostgreSQL: one simple query each, values as literals), the COMMIT on the driver connection
(SQLite: invoke's final one) with pending ORM changes flushed, and everything rolled back on an error. On
SQLite begin_with/commit_with fall back to the prepared statements: the results are the same."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from sqlalchemy import Table, bindparam, event, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from proxyplane.platform import Platform
from proxyplane.storage import transaction
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.lean_setting import LEAN
from proxyplane.storage.models import Customer, IdempotencyRecord
from tests.support import make_account

pytestmark = pytest.mark.anyio
LEAN_ONLY = pytest.mark.skipif(not LEAN, reason="the lean form itself (PROXYPLANE_LEAN_STORAGE=0: off)")
_RECORDS = cast(Table, IdempotencyRecord.__table__)
_CLAIM = DriverStatement(pg_insert(_RECORDS).on_conflict_do_nothing())
_STORE = DriverStatement(
    update(_RECORDS).where(_RECORDS.c.key == bindparam("record_key")).values(response=bindparam("response"))
)
TRICKY = "it's a 'key' -- with \\ backslash; DROP TABLE x; $1 ü"  # quotes, backslash, $n, non-ASCII


def _record(customer_id: int, key: str) -> dict[str, Any]:
    return {
        "customer_id": customer_id,
        "operation": "txn_test",
        "key": key,
        "request_hash": "h",
        "response": {},
    }


async def _stored(platform: Platform, customer_id: int) -> dict[str, Any]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(IdempotencyRecord.key, IdempotencyRecord.response).where(
                IdempotencyRecord.customer_id == customer_id
            )
        )
        return {r.key: r.response for r in rows}


@LEAN_ONLY
async def test_begin_with_and_commit_with_round_trip_literal_values(platform: Platform) -> None:
    account = await make_account(platform)
    postgres = not platform.db.is_sqlite
    seen: list[str] = []
    engine = platform.db.engine.sync_engine
    listener = lambda *a: seen.append(a[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        async with platform.db.unit_of_work() as uow:
            status = await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, TRICKY))
            assert status == ("INSERT 0 1" if postgres else None)  # SQLite: nothing sent
            if status is None:
                await _CLAIM.rows(uow.session, _record(account.customer_id, TRICKY))
            response = {"text": TRICKY, "n": [1, 2.5, None]}
            await uow.commit_with(_STORE, {"record_key": TRICKY, "response": response})
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert await _stored(platform, account.customer_id) == {TRICKY: response}
    assert len([s for s in seen if "idempotency_records" in s]) == 2  # each statement seen once
    async with platform.db.unit_of_work() as uow:  # a second claim of the key inserts nothing
        status = await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, TRICKY))
        assert status == ("INSERT 0 0" if postgres else None)


async def test_an_error_after_begin_with_rolls_everything_back(platform: Platform) -> None:
    account = await make_account(platform)
    key = f"gone-{uuid.uuid4().hex}"
    with pytest.raises(RuntimeError):
        async with platform.db.unit_of_work() as uow:
            if await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, key)) is None:
                await _CLAIM.rows(uow.session, _record(account.customer_id, key))
            raise RuntimeError("the handler failed")
    assert await _stored(platform, account.customer_id) == {}
    # the pooled connection is usable again: no transaction left open on it
    async with platform.db.unit_of_work() as uow:
        if await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, key)) is None:
            await _CLAIM.rows(uow.session, _record(account.customer_id, key))
        await uow.commit()
    assert list(await _stored(platform, account.customer_id)) == [key]


async def test_commit_flushes_pending_orm_changes(platform: Platform) -> None:
    """A final commit (invoke's) goes to the driver on both engines: the ORM change is flushed first."""
    account = await make_account(platform)
    key = f"orm-{uuid.uuid4().hex}"
    async with platform.db.unit_of_work() as uow:
        if await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, key)) is None:
            await _CLAIM.rows(uow.session, _record(account.customer_id, key))
        customer = await uow.session.get(Customer, account.customer_id)
        assert customer is not None
        customer.name = "renamed in the same unit of work"  # pending: flushed by the commit
        await uow.commit_with(_STORE, {"record_key": key, "response": {"ok": True}}, final=True)
    async with platform.db.unit_of_work(write=False) as uow:
        name = (
            await uow.session.execute(select(Customer.name).where(Customer.id == account.customer_id))
        ).scalar()
    assert name == "renamed in the same unit of work"
    assert await _stored(platform, account.customer_id) == {key: {"ok": True}}


@LEAN_ONLY
async def test_statements_are_prepared_once_per_connection(platform: Platform) -> None:
    """PostgreSQL: the claim and the store become EXECUTEs of statements prepared on the connection (the
    store, first seen inside a transaction, from the connection's next BEGIN on); values stay exact."""
    account = await make_account(platform)
    postgres = not platform.db.is_sqlite
    keys = [TRICKY + str(n) for n in range(3)]
    for key in keys:
        async with platform.db.unit_of_work() as uow:
            if await transaction.begin_with(uow.session, _CLAIM, _record(account.customer_id, key)) is None:
                await _CLAIM.rows(uow.session, _record(account.customer_id, key))
            held = set()
            if postgres:
                rows = await uow.session.execute(
                    text("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'pp\\_%'")
                )
                held = {r[0].split(" AS ", 1)[1].split()[0] for r in rows if "idempotency_records" in r[0]}
            await uow.commit_with(_STORE, {"record_key": key, "response": {"key": key}})
        if key != keys[0]:  # every connection has prepared both once the store was seen
            assert held == ({"INSERT", "UPDATE"} if postgres else set())
    assert await _stored(platform, account.customer_id) == {key: {"key": key} for key in keys}


def test_literals() -> None:
    assert transaction.literal(None) == "NULL"
    assert transaction.literal(-12) == "-12"
    assert transaction.literal("a'b") == "'a''b'"
    with pytest.raises(ValueError):
        transaction.literal("nul\x00")
    with pytest.raises(TypeError):
        transaction.literal(True)
    with pytest.raises(TypeError):
        transaction.literal(1.5)  # type: ignore[arg-type]
