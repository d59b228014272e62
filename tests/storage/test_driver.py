"""storage/driver.DriverStatement (issue 15): a statement run on the driver connection is part of the unit
of work's transaction (rolled back with it), applies SQLAlchemy's bind processors (JSON, datetimes) and
the model's INSERT defaults, is seen by the engine's statement listeners, and a constraint violation is
SQLAlchemy's IntegrityError as through the session."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from sqlalchemy import Table, event, insert, select, text
from sqlalchemy.exc import IntegrityError

from proxyplane.platform import Platform
from proxyplane.storage.driver import DriverScript, DriverStatement
from proxyplane.storage.lean_setting import LEAN
from proxyplane.storage.models import IdempotencyRecord
from tests.support import make_account

pytestmark = pytest.mark.anyio
LEAN_ONLY = pytest.mark.skipif(not LEAN, reason="the lean form itself (PROXYPLANE_LEAN_STORAGE=0: off)")
_RECORDS = cast(Table, IdempotencyRecord.__table__)
_INSERT = DriverStatement(insert(_RECORDS).returning(_RECORDS.c.id))


def _record(customer_id: int, key: str) -> dict[str, Any]:  # created_at left to the model's default
    return {
        "customer_id": customer_id,
        "operation": "driver_test",
        "key": key,
        "request_hash": "h",
        "response": {"a": [1, "b"]},
    }


async def _keys(platform: Platform, customer_id: int) -> dict[str, Any]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(IdempotencyRecord.key, IdempotencyRecord.response, IdempotencyRecord.created_at).where(
                IdempotencyRecord.customer_id == customer_id
            )
        )
        return {r.key: (r.response, r.created_at) for r in rows}


async def test_driver_statements_share_the_transaction_and_the_listeners(platform: Platform) -> None:
    account = await make_account(platform)
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        async with platform.db.unit_of_work() as uow:  # rolled back: leaves without commit
            assert await _INSERT.scalar(uow.session, _record(account.customer_id, "gone")) is not None
        async with platform.db.unit_of_work() as uow:
            first = await _INSERT.scalar(uow.session, _record(account.customer_id, "kept"))
            await DriverStatement(insert(_RECORDS)).many(
                uow.session, [_record(account.customer_id, f"many-{i}") for i in range(3)]
            )
            await uow.commit()
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert isinstance(first, int)
    assert sum("idempotency_records" in s for s in seen) == 3  # one per execution, executemany once
    kept = await _keys(platform, account.customer_id)
    assert sorted(kept) == ["kept", "many-0", "many-1", "many-2"]
    response, created_at = kept["kept"]
    assert response == {"a": [1, "b"]}  # the JSON bind processor ran
    assert created_at is not None and created_at.tzinfo is not None  # the model's default, UTC


async def test_a_constraint_violation_is_an_integrity_error(platform: Platform) -> None:
    account = await make_account(platform)
    key = uuid.uuid4().hex
    with pytest.raises(IntegrityError):
        async with platform.db.unit_of_work() as uow:
            await _INSERT.scalar(uow.session, _record(account.customer_id, key))
            await _INSERT.scalar(uow.session, _record(account.customer_id, key))  # same unique key
    assert await _keys(platform, account.customer_id) == {}


@LEAN_ONLY
async def test_a_driver_script_is_one_round_trip_on_postgresql(platform: Platform) -> None:
    """Parameterless statements together (PostgreSQL: one simple query, one statement for the listeners),
    in the transaction: the savepoint it opens is there for the next statements to roll back to."""
    account = await make_account(platform)
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    script = DriverScript("SAVEPOINT driver_test", "SELECT 1")
    engine = platform.db.engine.sync_engine
    async with platform.db.unit_of_work() as uow:
        await _INSERT.scalar(uow.session, _record(account.customer_id, "before"))
        event.listen(engine, "before_cursor_execute", count)
        try:
            await script.run(uow.session)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        await _INSERT.scalar(uow.session, _record(account.customer_id, "undone"))
        await DriverStatement(text("ROLLBACK TO SAVEPOINT driver_test")).rows(uow.session)
        await uow.commit()
    assert seen == (["SAVEPOINT driver_test; SELECT 1"] if not platform.db.is_sqlite else list(script.parts))
    assert sorted(await _keys(platform, account.customer_id)) == ["before"]
