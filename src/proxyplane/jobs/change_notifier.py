"""The change notifier (issue 15): wakes the gateway nodes when the change log advanced, on PostgreSQL.

The trigger functions that fill ``gateway_changes`` no longer send NOTIFY (migration 0020i): PostgreSQL
serializes the commits of notifying transactions under one global lock, which capped every order's
commit. Instead this loop reads the log every ``interval`` (50 ms) on its own autocommit connection with
the nodes' own reader (storage/repos/gateway_changes.py ChangeFeed: ``seq > :last`` on the seq index,
and the sequence gaps of transactions still open, so a transaction that commits after a later one is
noticed too) and, when anything new committed, sends ``SELECT pg_notify('proxyplane_changes', '')`` as
its own tiny statement (the statements, the lock and the autocommit session are that module's).
Nodes still wake within ~50 ms; no order transaction notifies. Only one notifier per cluster
sends (``pg_try_advisory_lock`` held on its connection; the others retry every ``standby_interval``).
The nodes' 0.25 s poll stays the backstop when no notifier runs. Runs with the job worker: inside
``proxyplane serve`` (worker_in_serve) and in ``proxyplane worker``. SQLite: nothing to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.jobs.background import background
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import gateway_changes as changes

log = logging.getLogger("proxyplane.change_notifier")


class ChangeNotifier:
    """``await run(stop)`` until ``stop`` is set. ``sent`` counts the notifications sent."""

    def __init__(self, db: Database, interval: float = 0.05, standby_interval: float = 1.0) -> None:
        self.db = db
        self.interval, self.standby_interval = interval, standby_interval
        self.sent = 0
        self.active = False  # holds the cluster's notifier lock
        self.ready = asyncio.Event()  # set once the lock is held and the log position read

    async def run(self, stop: asyncio.Event) -> None:
        if not changes.notifies(self.db):
            return
        while not stop.is_set():
            try:
                async with changes.notifier_session(self.db) as session:
                    try:
                        await self._serve(session, stop)
                    finally:
                        if self.active:
                            with contextlib.suppress(Exception):
                                await changes.release_notifier_lock(session)
            except Exception as exc:  # noqa: BLE001  (the nodes' poll keeps working meanwhile)
                log.warning("change notifier: %s; retrying", exc)
            self.active = False
            await _wait(stop, self.standby_interval)

    async def _serve(self, session: AsyncSession, stop: asyncio.Event) -> None:
        while not await changes.take_notifier_lock(session):
            if await _wait(stop, self.standby_interval):
                return
        self.active = True
        feed = changes.feed_for(self.db)
        await feed.mark(session)
        await changes.notify_nodes(session)  # anything committed before this notifier started
        self.sent += 1
        self.ready.set()
        while not await _wait(stop, self.interval):
            batch = await feed.read(session, max_keys=changes.PAGE)
            if batch.keys or batch.reload_all:
                if batch.reload_all:
                    await feed.mark(session)
                await changes.notify_nodes(session)
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
