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
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import client_ips as client_ip_repo
from proxyplane.storage.repos import gateway_nodes

from . import periodic
from .client_ips import ClientIps
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
        client_ips: ClientIps | None = None,
    ) -> None:
        self.db, self.limiter, self.node_id = db, limiter, node_id
        self.publish = True
        self.client_ips = client_ips  # anti-sharing (issue 32.5): exchanged in the same transaction
        self.reporter = node_id  # its row of gateway_client_ips: one per process
        self._reported = False
        if isinstance(limiter, WorkerLimiter):  # one row per host, written by its worker 0
            self.node_id, self.publish = limiter.host_id, limiter.worker == 0
            self.reporter = f"{limiter.host_id}/w{limiter.worker}"
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
                await gateway_nodes.publish_connections(uow.session, self.node_id, counts, now)
            if asyncio.get_running_loop().time() - self._last_cleanup > 600.0:
                self._last_cleanup = asyncio.get_running_loop().time()
                old = now - timedelta(hours=1)
                await gateway_nodes.prune_connections(uow.session, old)
                await client_ip_repo.prune(uow.session, old)
            others: dict[str, int] = {}
            for node_counts in await gateway_nodes.other_connections(uow.session, self.node_id, fresh):
                for sid, n in node_counts.items():
                    others[sid] = others.get(sid, 0) + int(n)
            reports = await self._exchange_client_ips(uow.session, now, fresh)
            await uow.commit()
        self.limiter.set_others(others)
        if self.client_ips is not None:
            self.client_ips.set_others(reports)

    async def _exchange_client_ips(
        self, session: AsyncSession, now: datetime, fresh: datetime
    ) -> list[dict[str, Any]]:
        """Publish the client addresses this process saw (its row removed once it has none), then take
        the other processes' (issue 32.5; gateway/client_ips.py)."""
        if self.client_ips is None:
            return []
        report = self.client_ips.report()
        if report:
            await client_ip_repo.publish(session, self.reporter, report, now)
        elif self._reported:
            await client_ip_repo.remove(session, self.reporter)
        self._reported = bool(report)
        return await client_ip_repo.others(session, self.reporter, fresh)

    async def _run(self) -> None:
        await periodic.run_forever(
            self.sync, lambda: asyncio.sleep(self.interval), log, "connection count sync failed; retrying"
        )

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
        if self._reported:
            with contextlib.suppress(Exception):
                async with self.db.unit_of_work(write=True) as uow:
                    await client_ip_repo.remove(uow.session, self.reporter)
                    await uow.commit()
        if not self.publish:
            return
        with contextlib.suppress(Exception):
            async with self.db.unit_of_work(write=True) as uow:
                await gateway_nodes.remove_connections(uow.session, self.node_id)
                await uow.commit()
