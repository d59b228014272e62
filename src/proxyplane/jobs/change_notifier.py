"""The change notifier (issue 15): wakes the gateway nodes when the change log advanced, on PostgreSQL.

The trigger functions that fill ``gateway_changes`` no longer send NOTIFY (migration 0020i): PostgreSQL
serializes the commits of notifying transactions under one global lock, which capped every order's
commit. Instead this loop reads the log every ``interval`` (50 ms) on its own autocommit connection with
the nodes' own reader (gateway/changes.py ChangeFeed: ``seq > :last`` on the seq index, and the sequence
gaps of transactions still open, so a transaction that commits after a later one is noticed too) and,
when anything new committed, sends ``SELECT pg_notify('proxyplane_changes', '')`` as its own tiny
statement. Nodes still wake within ~50 ms; no order transaction notifies. Only one notifier per cluster
sends (``pg_try_advisory_lock`` held on its connection; the others retry every ``standby_interval``).
The nodes' 0.25 s poll stays the backstop when no notifier runs. Runs with the job worker: inside
``proxyplane serve`` (worker_in_serve) and in ``proxyplane worker``. SQLite: nothing to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from proxyplane.gateway.changes import CHANNEL, PAGE, ChangeFeed
from proxyplane.jobs.background import background
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import Database

log = logging.getLogger("proxyplane.change_notifier")

LOCK_KEY = 0x70705F6E6F74  # "pp_not": one notifier per cluster
TRY_LOCK = text(f"SELECT pg_try_advisory_lock({LOCK_KEY})")
UNLOCK = text(f"SELECT pg_advisory_unlock({LOCK_KEY})")
NOTIFY = text(f"SELECT pg_notify('{CHANNEL}', '')")
_NOTIFY = DriverStatement(NOTIFY)  # on the driver connection, as the feed's reads (storage/driver.py)


class ChangeNotifier:
    """``await run(stop)`` until ``stop`` is set. ``sent`` counts the notifications sent."""

    def __init__(self, db: Database, interval: float = 0.05, standby_interval: float = 1.0) -> None:
        self.db = db
        self.interval, self.standby_interval = interval, standby_interval
        self.sent = 0
        self.active = False  # holds the cluster's notifier lock
        self.ready = asyncio.Event()  # set once the lock is held and the log position read

    async def run(self, stop: asyncio.Event) -> None:
        if self.db.is_sqlite:
            return
        while not stop.is_set():
            try:
                async with self._connection() as session:
                    await self._serve(session, stop)
            except Exception as exc:  # noqa: BLE001  (the nodes' poll keeps working meanwhile)
                log.warning("change notifier: %s; retrying", exc)
            self.active = False
            await _wait(stop, self.standby_interval)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncSession]:
        async with self.db.engine.connect() as conn:
            auto: AsyncConnection = await conn.execution_options(isolation_level="AUTOCOMMIT")
            session = AsyncSession(bind=auto)
            try:
                yield session
            finally:
                if self.active:
                    with contextlib.suppress(Exception):
                        await session.execute(UNLOCK)
                await session.close()

    async def _serve(self, session: AsyncSession, stop: asyncio.Event) -> None:
        while not (await session.execute(TRY_LOCK)).scalar_one():
            if await _wait(stop, self.standby_interval):
                return
        self.active = True
        feed = ChangeFeed(postgres=True)
        await feed.mark(session)
        await _NOTIFY.rows(session)  # anything committed before this notifier started
        self.sent += 1
        self.ready.set()
        while not await _wait(stop, self.interval):
            batch = await feed.read(session, max_keys=PAGE)
            if batch.keys or batch.reload_all:
                if batch.reload_all:
                    await feed.mark(session)
                await _NOTIFY.rows(session)
                self.sent += 1


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep up to ``seconds``; True when ``stop`` was set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


@contextlib.asynccontextmanager
async def notifier_task(db: Database) -> AsyncIterator[ChangeNotifier]:
    """Runs a ChangeNotifier in the background until the block exits."""
    notifier = ChangeNotifier(db)
    async with background(notifier.run, "change-notifier"):
        yield notifier
