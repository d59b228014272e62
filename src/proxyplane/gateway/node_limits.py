"""Concurrent-connection limits across gateway nodes, through the shared store.

Each node counts its own open connections per service in memory (limits.py; the hot path never touches
the store). Every ``interval`` (1 s) a node writes its counts to its row of ``gateway_node_connections``
(one upsert of one row, whatever the traffic) and reads the other nodes' rows refreshed within the last
``stale`` seconds (5 s); their sum per service becomes the limiter's ``others``, and a new connection is
admitted only while ``own + others < limit``.

Consistency window: another node's connections are seen at most ``interval`` + a sync's duration late,
so connections opened at the same time on several nodes within that window can exceed the limit by at
most what was free (never by more than (nodes - 1) x free slots); it corrects itself at the next refresh
(no new connection is admitted until the total is under the limit; open ones are not cut). A node that
stops writing (crashed) stops counting after ``stale`` seconds; a node that closes deletes its row. Node
clocks are assumed to agree within a second or so (NTP). Rows older than an hour are deleted.

A host with several worker processes (limits.WorkerLimiter) is one node here: its workers count in one
shared table (exact among them), worker 0 alone writes the host's totals as the row ``host_id``, and every
worker reads the rows of the other hosts (not its own host's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.models.gateway_health import GatewayNodeConnections

from . import periodic
from .limits import ConnectionLimiter, WorkerLimiter

log = logging.getLogger(__name__)


class NodeCounts:
    def __init__(
        self,
        db: Database,
        limiter: ConnectionLimiter,
        node_id: str,
        interval: float = 1.0,
        stale: float = 5.0,
    ) -> None:
        self.db, self.limiter, self.node_id = db, limiter, node_id
        self.publish = True
        if isinstance(limiter, WorkerLimiter):  # one row per host, written by its worker 0
            self.node_id, self.publish = limiter.host_id, limiter.worker == 0
        self.interval, self.stale = interval, stale
        self._task: asyncio.Task[None] | None = None
        self._last_cleanup = 0.0

    async def start(self) -> None:
        await self.sync()
        self._task = asyncio.ensure_future(self._run())

    async def sync(self) -> None:
        """Publish this node's counts, then take the other live nodes' sums."""
        if isinstance(self.limiter, WorkerLimiter):
            self.limiter.report()
        now = utcnow()
        fresh = now - timedelta(seconds=self.stale)
        async with self.db.unit_of_work(write=True) as uow:
            if self.publish:
                counts = {sid: n for sid, n in self.limiter.snapshot().items() if n > 0}
                insert = sqlite_insert if self.db.is_sqlite else pg_insert
                stmt = insert(GatewayNodeConnections).values(
                    node_id=self.node_id, counts=counts, updated_at=now
                )
                stmt = stmt.on_conflict_do_update(
                    index_elements=["node_id"], set_={"counts": stmt.excluded.counts, "updated_at": now}
                )
                await uow.session.execute(stmt)
            if asyncio.get_running_loop().time() - self._last_cleanup > 600.0:
                self._last_cleanup = asyncio.get_running_loop().time()
                old = now - timedelta(hours=1)
                await uow.session.execute(
                    delete(GatewayNodeConnections).where(GatewayNodeConnections.updated_at < old)
                )
            rows = await uow.session.execute(
                select(GatewayNodeConnections.counts).where(
                    GatewayNodeConnections.node_id != self.node_id,
                    GatewayNodeConnections.updated_at > fresh,
                )
            )
            others: dict[str, int] = {}
            for (node_counts,) in rows.all():
                for sid, n in (node_counts or {}).items():
                    others[sid] = others.get(sid, 0) + int(n)
            await uow.commit()
        self.limiter.set_others(others)

    async def _run(self) -> None:
        await periodic.run_forever(
            self.sync, lambda: asyncio.sleep(self.interval), log, "connection count sync failed; retrying"
        )

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
        if not self.publish:
            return
        with contextlib.suppress(Exception):
            async with self.db.unit_of_work(write=True) as uow:
                await uow.session.execute(
                    delete(GatewayNodeConnections).where(GatewayNodeConnections.node_id == self.node_id)
                )
                await uow.commit()
