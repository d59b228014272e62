"""PostgreSQL pool without a ping per checkout: a connection that died while idle in the pool longer
than IDLE_PING_SECONDS is found by the checkout ping and replaced; the unit of work never sees it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import event, text

from proxyplane.storage import engine as engine_module
from proxyplane.storage.engine import Database

pytestmark = pytest.mark.anyio


async def test_an_idle_dead_connection_is_replaced_at_checkout(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL pool only (SQLite has no server connection to lose)")
    db = Database(database_url, pool_size=1, max_overflow=0)
    killer = Database(database_url, pool_size=1, max_overflow=0)
    try:
        assert db.engine.pool._pre_ping is False  # type: ignore[attr-defined]
        async with db.unit_of_work(write=False) as uow:
            pid = int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        async with killer.unit_of_work() as uow:  # the server ends the idle pooled connection
            await uow.session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            await uow.commit()
        monkeypatch.setattr(engine_module, "IDLE_PING_SECONDS", 0.0)
        async with db.unit_of_work(write=False) as uow:
            again = int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        assert again != pid
    finally:
        await db.dispose()
        await killer.dispose()


async def test_warm_opens_the_pool_before_the_first_request(database_url: str) -> None:
    db = Database(database_url, pool_size=4, max_overflow=0)
    try:
        if not database_url.startswith("postgresql"):
            assert await db.warm() == 0
            return
        assert await db.warm() == 4
        assert db.engine.pool.checkedin() == 4  # type: ignore[attr-defined]
        pids = set()
        for _ in range(4):  # the opened connections are the ones units of work get
            async with db.unit_of_work(write=False) as uow:
                pids.add(int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0))
        assert db.engine.pool.checkedin() == 4  # type: ignore[attr-defined]
    finally:
        await db.dispose()


async def test_connections_are_replaced_at_spread_points_of_their_lifetime(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL pool only")
    db = Database(database_url, pool_size=3, max_overflow=0, pool_recycle=1000)
    records: list[Any] = []
    event.listen(db.engine.sync_engine, "connect", lambda _conn, record: records.append(record))
    try:
        await db.warm()
        deadlines = [r.info["pp_replace_at"] for r in records]
        assert len(set(deadlines)) == 3  # opened together, replaced apart
        assert all(750 <= d - time.monotonic() <= 1000 for d in deadlines)
        for record in records:  # their lifetimes are over: the next checkout reconnects
            record.info["pp_replace_at"] = 0.0
        async with db.unit_of_work(write=False) as uow:
            assert await uow.session.scalar(text("SELECT 1")) == 1
        assert len(records) == 4  # one connect more
        assert records[-1].info["pp_replace_at"] > time.monotonic()
    finally:
        await db.dispose()
