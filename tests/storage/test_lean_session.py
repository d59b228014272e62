"""storage/driver.LeanSession (issue 15): a lean unit of work on PostgreSQL is a checked-out connection until
something needs the ORM; driver statements, begin_with/commit_with and the commit run on it without an
AsyncSession, the ORM once used joins the same transaction, and an error or a missing commit rolls
everything back. SQLite ignores `lean` (a plain session): the same results on both engines."""

from __future__ import annotations

import uuid
from typing import cast

import pytest
from sqlalchemy import Table, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.platform import Platform
from proxyplane.storage import transaction
from proxyplane.storage.driver import DriverStatement, LeanSession
from proxyplane.storage.lean_setting import LEAN
from proxyplane.storage.models import IdempotencyRecord
from tests.storage.test_transaction import _CLAIM, _STORE, _record, _stored
from tests.support import make_account

pytestmark = pytest.mark.anyio
LEAN_ONLY = pytest.mark.skipif(not LEAN, reason="the lean form itself (PROXYPLANE_LEAN_STORAGE=0: off)")
_RECORDS = cast(Table, IdempotencyRecord.__table__)
_INSERT = {
    "postgresql": DriverStatement(pg_insert(_RECORDS).on_conflict_do_nothing()),
    "sqlite": DriverStatement(sqlite_insert(_RECORDS).on_conflict_do_nothing()),
}


@LEAN_ONLY
async def test_driver_statements_and_commit_without_a_session(platform: Platform) -> None:
    account = await make_account(platform)
    cid = account.customer_id
    async with platform.db.unit_of_work(lean=True) as uow:
        lean = uow.session
        status = await transaction.begin_with(uow.session, _CLAIM, _record(cid, "a"))
        if status is None:  # SQLite: a plain session, the prepared statement
            await _INSERT[uow.dialect].rows(uow.session, _record(cid, "a"))
        await _INSERT[uow.dialect].rows(uow.session, _record(cid, "b"))
        await uow.commit_with(_STORE, {"record_key": "b", "response": {"x": 1}}, final=True)
        if platform.db.is_sqlite:
            assert isinstance(lean, AsyncSession)
        else:
            assert status == "INSERT 0 1"
            assert type(lean) is LeanSession and lean.real is None  # no AsyncSession was built
    assert await _stored(platform, cid) == {"a": {}, "b": {"x": 1}}


@LEAN_ONLY
async def test_the_orm_joins_the_same_transaction(platform: Platform) -> None:
    account = await make_account(platform)
    cid = account.customer_id
    async with platform.db.unit_of_work(lean=True) as uow:
        await _INSERT[uow.dialect].rows(uow.session, _record(cid, "seen"))
        found = await uow.session.scalar(  # the ORM, in the same (uncommitted) transaction
            select(IdempotencyRecord.key).where(IdempotencyRecord.customer_id == cid)
        )
        assert found == "seen"
        uow.session.add(IdempotencyRecord(**_record(cid, "added")))  # flushed by the next driver statement
        await _INSERT[uow.dialect].rows(uow.session, _record(cid, "after"))
        if not platform.db.is_sqlite:
            lean = cast(LeanSession, uow.session)
            assert lean.real is not None
        await uow.commit(final=True)
    assert set(await _stored(platform, cid)) == {"seen", "added", "after"}


@pytest.mark.parametrize("orm", [False, True])
async def test_an_error_or_no_commit_rolls_everything_back(platform: Platform, orm: bool) -> None:
    account = await make_account(platform)
    cid = account.customer_id
    with pytest.raises(RuntimeError):
        async with platform.db.unit_of_work(lean=True) as uow:
            await _INSERT[uow.dialect].rows(uow.session, _record(cid, "lost"))
            if orm:
                uow.session.add(IdempotencyRecord(**_record(cid, "lost too")))
                await uow.session.flush()
            raise RuntimeError("handler failed")
    async with platform.db.unit_of_work(lean=True) as uow:  # left without commit
        await _INSERT[uow.dialect].rows(uow.session, _record(cid, "uncommitted"))
    assert await _stored(platform, cid) == {}
    async with platform.db.unit_of_work(lean=True) as uow:  # the connections came back usable
        await _INSERT[uow.dialect].rows(uow.session, _record(cid, uuid.uuid4().hex))
        await uow.commit(final=True)
    assert len(await _stored(platform, cid)) == 1
