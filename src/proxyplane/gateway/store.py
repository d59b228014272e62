"""The store-backed access table: load every servable service into the AccessTable and keep it current.

Change detection (docs/decisions/gateway.md "Gateway", 1. Change log):
- database triggers (migration 0012c) stamp a row of ``gateway_changes`` with a new sequence number for
  every service whose rows change (services, IPs, whitelist, add-ons, proxy settings) and for every
  rotating pool whose stock changes, whoever the writer is;
- each node reads ``seq > :last`` every ``poll_interval`` (0.25 s): one indexed statement whatever the
  size of the store (storage/repos/gateway_changes.py); on PostgreSQL a LISTEN connection wakes it at once;
- only the changed services are re-read (their service row, IPs, whitelist, add-ons: store_load.py);
  a changed pool is re-read in place;
- an active service whose term ends is switched off locally at its end time (a heap of term ends: no
  SQL, no scan of the table);
- ``notify(service_id)`` is the in-process fast path (``platform.on("entitlements_changed")``);
- a full reload runs every ``full_reload_interval`` (setting FULL_RELOAD_SECONDS, default 1 hour, was
  60 s: it is O(everything) per node) as a backstop, and when a node is more than ``max_incremental``
  services behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import heapq
import logging
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from proxyplane.core.clock import utcnow
from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.security import SecretBox
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import gateway_changes

from . import periodic
from .access import AccessTable, ServiceEntry
from .store_load import (  # noqa: F401  (re-exported: callers import them from here)
    LOADED_STATUSES,
    Loaded,
    Pools,
    active_addons,
    connection_limit,
    exit_pool,
    is_active,
    load_entries,
)

log = logging.getLogger(__name__)

STATIC_KINDS = ("proxy_datacenter", "proxy_isp", "proxy_personal")


class StoreSync:
    """Keeps an AccessTable equal to the store. ``await start()`` loads everything; ``close()`` stops."""

    def __init__(
        self,
        db: Database,
        box: SecretBox,
        table: AccessTable | None = None,
        *,
        poll_interval: float = 0.25,
        full_reload_interval: float | None = None,
        max_incremental: int = 20_000,
        listen: bool = True,
    ) -> None:
        self.db, self.box = db, box
        self.table = table if table is not None else AccessTable()
        self.table.unseal = box.decrypt
        if full_reload_interval is None:  # PROXYPLANE_GATEWAY_FULL_RELOAD_SECONDS, default 1 hour
            full_reload_interval = GatewaySettings().full_reload_seconds
        self.poll_interval, self.full_reload_interval = poll_interval, full_reload_interval
        self.max_incremental = max_incremental
        self.feed = gateway_changes.feed_for(db)
        self.pools = Pools()
        self.listener = gateway_changes.listener_for(db, self.wake) if listen else None
        self._ends: dict[uuid.UUID, datetime] = {}  # term ends of active services
        self._end_heap: list[tuple[datetime, uuid.UUID]] = []
        self._pending: set[uuid.UUID] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_full = 0.0
        self.polls = 0
        self.full_reloads = 0
        self.last_load: dict[str, float] = {}  # seconds per step of the last full load
        self.statements = 0  # log reads of the last poll (tests, bench)
        # called with the write -> applied lag (s) of each poll that applied changes (node: a histogram)
        self.on_applied: Callable[[float], None] | None = None

    async def start(self) -> None:
        await self.full_reload()
        if self.listener is not None:
            await self.listener.ensure()
        self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
        if self.listener is not None:
            await self.listener.close()

    def wake(self) -> None:
        self._wake.set()

    def notify(self, service_id: Any = None) -> None:
        """In-process fast path: reload ``service_id`` (or poll) now."""
        if service_id is not None:
            with contextlib.suppress(ValueError):
                self._pending.add(
                    service_id if isinstance(service_id, uuid.UUID) else uuid.UUID(str(service_id))
                )
        self._wake.set()

    async def full_reload(self) -> None:
        self.full_reloads += 1
        gc.unfreeze()  # the previous load's objects: collectable again once replaced
        # millions of long-lived objects: the cyclic GC would traverse all of them again and again while
        # they are created (a third of a cold start); it is off during the load, and what the load built
        # is frozen afterwards (kept out of later collections)
        stages: dict[str, float] = {}
        collecting = gc.isenabled()
        gc.disable()
        try:
            async with self.db.unit_of_work(write=False) as uow:
                await self.feed.mark(uow.session)
                self.pools = Pools()
                loaded = await load_entries(uow.session, None, None, self.pools, stages)
            mark = time.perf_counter()
            self.table.replace_all(entry for entry, _ in loaded.values())
            self._ends = {sid: end for sid, (e, end) in loaded.items() if e.active and end is not None}
            self._end_heap = [(end, sid) for sid, end in self._ends.items()]
            heapq.heapify(self._end_heap)
            del loaded
            stages["index"] = time.perf_counter() - mark
        finally:
            if collecting:
                gc.enable()
        gc.freeze()
        self.last_load = stages
        self._last_full = asyncio.get_running_loop().time()

    def _track_end(self, sid: uuid.UUID, entry: ServiceEntry, end: datetime | None) -> None:
        if entry.active and end is not None:
            self._ends[sid] = end
            heapq.heappush(self._end_heap, (end, sid))
        else:
            self._ends.pop(sid, None)

    def _ended(self, now: datetime) -> set[uuid.UUID]:
        """Services whose term ended by ``now`` (stale heap items, from a term since changed, are dropped)."""
        out: set[uuid.UUID] = set()
        heap = self._end_heap
        while heap and heap[0][0] <= now:
            end, sid = heapq.heappop(heap)
            if self._ends.get(sid) == end:
                out.add(sid)
        return out

    async def poll(self) -> None:
        """One round: read the change log, reload the changed services and pools (or everything)."""
        self.polls += 1
        if asyncio.get_running_loop().time() - self._last_full >= self.full_reload_interval:
            await self.full_reload()
            return
        changed = self._ended(utcnow()) | self._pending
        self._pending = set()
        async with self.db.unit_of_work(write=False) as uow:
            batch = await self.feed.read(uow.session, self.max_incremental)
            read_at = time.monotonic()
            self.statements = batch.statements
            if batch.reload_all:
                loaded = None
            else:
                for key in batch.keys:
                    if key.startswith("pool:"):
                        await self.pools.refresh(uow.session, key[5:])
                    else:
                        with contextlib.suppress(ValueError):
                            changed.add(uuid.UUID(key))
                loaded = await load_entries(uow.session, None, changed, self.pools) if changed else {}
        if loaded is None:
            log.info("gateway store: more than %d changes behind; reloading everything", self.max_incremental)
            self._pending |= changed
            await self.full_reload()
            self._applied(batch.lag, read_at)
            return
        upserts = []
        for sid in changed:
            self._ends.pop(sid, None)
            if sid in loaded:
                entry, end = loaded[sid]
                upserts.append(entry)
                self._track_end(sid, entry, end)
        removals = [str(sid) for sid in changed if sid not in loaded]
        if upserts or removals:
            self.table.apply(upserts, removals)
        self._applied(batch.lag, read_at)

    def _applied(self, lag: float | None, read_at: float) -> None:
        """Lag of the newest change read (database clock) plus the local time from read to applied."""
        if lag is not None and self.on_applied is not None:
            self.on_applied(lag + time.monotonic() - read_at)

    async def _ensure_and_poll(self) -> None:
        if self.listener is not None:
            await self.listener.ensure()
        await self.poll()

    async def _run(self) -> None:
        await periodic.run_forever(
            self._ensure_and_poll,
            lambda: periodic.woken_or_timeout(self._wake, self.poll_interval),
            log,
            "gateway store poll failed; retrying",
            backoff=1.0,
        )
