"""Issue 15: no order transaction sends NOTIFY (migration 0020i); the change notifier
(jobs/change_notifier.py) sends one when the change log advanced, so gateway nodes still wake at once
(a node woken by it: tests/gateway/test_store_changes.py test_notify_wakes_a_postgresql_node).
PostgreSQL only: SQLite has no NOTIFY/LISTEN (its nodes poll; the notifier does nothing there)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from proxyplane.jobs.change_notifier import ChangeNotifier
from proxyplane.platform import Platform
from proxyplane.storage.repos.gateway_changes import CHANNEL, NOTIFIER_LOCK
from tests.gateway.test_store_changes import generated, set_max_connections

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def postgres(platform: Platform) -> Platform:
    if platform.db.is_sqlite:
        pytest.skip("PostgreSQL only: SQLite has no NOTIFY/LISTEN, its gateway nodes poll the change log")
    return platform


class Listening:
    """A LISTEN proxyplane_changes connection of its own that records what arrives."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.got = asyncio.Event()
        self.count = 0

    def _notified(self, *_args: Any) -> None:
        self.count += 1
        self.got.set()

    def clear(self) -> None:
        self.got.clear()

    async def within(self, seconds: float) -> float | None:
        """Seconds until a notification arrives; None when none does within ``seconds``."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.got.wait(), seconds)
            return loop.time() - start
        return None


@contextlib.asynccontextmanager
async def listening(platform: Platform) -> AsyncIterator[Listening]:
    import asyncpg  # type: ignore[import-untyped]

    dsn = make_url(platform.db.url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(dsn)
    listener = Listening(conn)
    await conn.add_listener(CHANNEL, listener._notified)
    try:
        yield listener
    finally:
        await conn.close()


async def test_no_pp_log_function_notifies(postgres: Platform) -> None:
    async with postgres.db.unit_of_work(write=False) as uow:
        rows = (
            await uow.session.execute(
                text(
                    "SELECT proname, pg_get_functiondef(oid) FROM pg_proc WHERE proname LIKE 'pp\\_log\\_%' "
                    "AND pronamespace = current_schema()::regnamespace"
                )
            )
        ).all()
    assert len(rows) >= 7  # services, service_ips, ..., stock_ips, sub-users, subnets
    assert [name for name, body in rows if "pg_notify" in body] == []


async def test_a_commit_sends_nothing_until_the_notifier_runs(postgres: Platform) -> None:
    [sid] = await generated(postgres, 1, 1)
    async with listening(postgres) as listen:
        # holding the notifier lock keeps any other notifier on this database quiet during the check
        assert await listen.conn.fetchval(f"SELECT pg_try_advisory_lock({NOTIFIER_LOCK})")
        await set_max_connections(postgres, [sid], 4)
        assert await listen.within(0.3) is None, "the order's own commit sent a notification"

        standby = ChangeNotifier(postgres.db, standby_interval=0.05)
        stop = asyncio.Event()
        task = asyncio.create_task(standby.run(stop))
        await asyncio.sleep(0.1)
        assert not standby.active and standby.sent == 0  # another holder: it waits
        await listen.conn.fetchval(f"SELECT pg_advisory_unlock({NOTIFIER_LOCK})")
        try:
            await asyncio.wait_for(standby.ready.wait(), 2)
            assert await listen.within(1.0) is not None  # the start-up wake-up
            for value in (5, 6):
                listen.clear()
                await set_max_connections(postgres, [sid], value)
                # each write is signalled (the ~50 ms tick is bench/notify_commits' figure, not a timed test)
                assert await listen.within(3.0) is not None
        finally:
            stop.set()
            await task
    assert standby.sent >= 3
