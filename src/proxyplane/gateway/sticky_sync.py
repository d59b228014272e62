"""Sticky sessions shared through the store, so that the API (another process) can list, rotate, end and
purge them and several gateway nodes agree on a sid's exit IP.

- ``SharedRouter`` is the data plane's Router that remembers which sessions it created or changed;
- ``StickySync`` runs every ``interval`` (0.25 s): it upserts those sessions into ``sticky_sessions``
  (writer = this node's id) and applies the rows written by anybody else since its last look (with a
  5 s overlap for late commits): the API's rotations (new exit IP, TTL restarted), ends (``ended``), purge
  markers (sid ``*``) and other nodes' sessions. Of two nodes' live versions of a sid the one started first
  wins (the loser adopts it), so nodes converge; the API's rotations always win: a node never overwrites
  a row the API wrote with a session that started before the API's write (the upsert's WHERE), and a
  session adopted from the API is not written back under the node's id (which would turn it into a
  node version that an older session on another node would beat). Rows that expired an hour ago are
  deleted now and then.

The workers of one host (``proxyplane gateway --workers N``) are nodes to each other in the store (each
its own writer id), and in addition share a table in memory (shared_sticky.SharedSticky): a new session
is chosen under that table's lock, so a sid maps to one exit IP on the host at once, not after a sync;
whatever a worker adopts, rotates or forgets goes into that table too.

A sub-user's sessions (issue 18) are the router's under the derived service id ``"<service>/<pk>"``
(gateway/subusers.py); in the store they are rows of the service with sid ``"<pk>:<sid>"`` (a plain sid
has no ``:``), so the API lists, rotates and ends them with the service's, and a purge marker ``"<pk>:*"``
ends one sub-user's sessions while the service's ``"*"`` ends the service's and all its sub-users'
(``store_key`` / ``router_key``). A session whose id fits neither shape is not written: it is counted
(``proxyplane_gateway_sticky_sessions_skipped``) and logged, never dropped silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.models.gateway import PURGE_SID
from proxyplane.storage.repos import sticky_sessions

from . import metrics, periodic
from .access import ServiceEntry
from .routing import MOVED_EARLIER, STICKY_GONE, STRICT_GONE, Pool, Router, RoutingError, StickySession
from .shared_sticky import SharedSticky, sticky_key
from .subnets import SubnetPool

log = logging.getLogger(__name__)
API_WRITER = "api"  # proxyplane.domains.proxy.service.API_WRITER (the gateway does not import domains)
OVERLAP = timedelta(seconds=5)


def store_key(service_id: str, sid: str) -> tuple[uuid.UUID, str]:
    """(service uuid, stored sid) of a router session; ValueError when ``service_id`` is neither a service
    uuid nor a sub-user's ``"<service uuid>/<pk>"``."""
    service, slash, pk = service_id.partition("/")
    if slash:
        if not pk.isdigit():
            raise ValueError(f"not a sub-user's service id: {service_id!r}")
        sid = f"{pk}:{sid}"
    return uuid.UUID(service), sid


def router_key(service_id: str, sid: str) -> tuple[str, str]:
    """(router service id, sid) of a stored row: a sub-user's ``"<pk>:<sid>"`` is ``"<service>/<pk>"``'s."""
    pk, colon, rest = sid.partition(":")
    if colon and pk.isdigit():
        return f"{service_id}/{pk}", rest
    return service_id, sid


def _ts(value: datetime) -> float:
    return value.timestamp()


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


class SharedRouter(Router):
    """A Router whose new/changed sticky sessions are collected for the store."""

    def __init__(self, clock: Callable[[], float] | None = None, shared: SharedSticky | None = None) -> None:
        super().__init__(clock or time.time)
        self.dirty: set[tuple[str, str]] = set()
        self.shared = shared  # the host's table when this is one of several workers
        self._keys: dict[tuple[str, str], bytes] = {}  # shared-table keys of recent (service, sid)

    def _sticky(self, entry: ServiceEntry, sid: str, pool: Pool | SubnetPool, ttl_minutes: int | None,
                strict: bool = False) -> str:
        if self.shared is not None:
            return self._shared_sticky(self.shared, entry, sid, pool, ttl_minutes, strict)
        before = self._sessions.get(entry.service_id, {}).get(sid)
        ip = super()._sticky(entry, sid, pool, ttl_minutes, strict)
        if self._sessions[entry.service_id][sid] is not before:
            self.dirty.add((entry.service_id, sid))
        return ip

    def _shared_sticky(
        self, shared: SharedSticky, entry: ServiceEntry, sid: str, pool: Pool | SubnetPool,
        ttl_minutes: int | None, strict: bool = False,
    ) -> str:
        """The host's session when it is live and its IP still in the pool; else a new one, written to
        the shared table before it is used (check and choice under the table's lock)."""
        now = self._clock()
        sessions = self._sessions.setdefault(entry.service_id, {})
        key = self._key(entry.service_id, sid)
        found = shared.peek(key, now)  # a live session, read without the lock
        if found is not None and found[0] in pool:
            mine = sessions.get(sid)
            if mine is None or (mine.exit_ip, mine.started, mine.expires) != found:
                sessions[sid] = StickySession(entry.service_id, sid, *found)
            return found[0]
        with shared.lock:
            found = shared.get(key, now)
            if found is not None and found[0] in pool:
                ip, started, expires = found
                mine = sessions.get(sid)
                if mine is None or (mine.exit_ip, mine.started, mine.expires) != found:
                    sessions[sid] = StickySession(entry.service_id, sid, ip, started, expires)
                return ip
            if found is not None and strict:
                raise RoutingError(STRICT_GONE, STICKY_GONE)
            ttl = ttl_minutes * 60 if ttl_minutes is not None else entry.sticky_ttl
            ip = pool.pick(self._rng)
            shared.put(key, ip, now, now + ttl, now)
        sessions[sid] = StickySession(entry.service_id, sid, ip, now, now + ttl)
        self.dirty.add((entry.service_id, sid))
        return ip

    def _key(self, service_id: str, sid: str) -> bytes:
        key = self._keys.get((service_id, sid))
        if key is None:
            if len(self._keys) > 100_000:
                self._keys.clear()
            key = self._keys[(service_id, sid)] = sticky_key(service_id, sid)
        return key

    def held(self, service_id: str, sid: str) -> str | None:
        shared = self.shared
        if shared is None:
            return super().held(service_id, sid)
        key, now = self._key(service_id, sid), self._clock()
        found = shared.peek(key, now)
        if found is None:
            with shared.lock:
                found = shared.get(key, now)
        return None if found is None else found[0]

    def hold(self, service_id: str, sid: str, value: str, ttl: float) -> None:
        """As Router.hold; between workers under the host table's lock (a live session there keeps its
        window), and marked for the store."""
        shared = self.shared
        if shared is None:
            super().hold(service_id, sid, value, ttl)
        else:
            key, now = self._key(service_id, sid), self._clock()
            with shared.lock:
                found = shared.get(key, now)
                started, expires = (found[1] - MOVED_EARLIER, found[2]) if found is not None else \
                    (now, now + ttl)
                shared.put(key, value, started, expires, now)
            self._sessions.setdefault(service_id, {})[sid] = StickySession(service_id, sid, value, started,
                                                                            expires)
        self.dirty.add((service_id, sid))

    def _share(self, session: StickySession) -> None:
        if self.shared is not None:
            key = sticky_key(session.service_id, session.sid)
            with self.shared.lock:
                self.shared.put(key, session.exit_ip, session.started, session.expires, self._clock())

    def rotate(self, service: ServiceEntry, sid: str) -> StickySession | None:
        session = super().rotate(service, sid)
        if session is not None:
            self.dirty.add((service.service_id, sid))
            self._share(session)
        return session

    def session(self, service_id: str, sid: str) -> StickySession | None:
        return self._sessions.get(service_id, {}).get(sid)

    def family(self, service_id: str) -> list[str]:
        """The router ids of a service's sessions and of its sub-users' (a scan: purges only)."""
        prefix = service_id + "/"
        return [service_id, *(k for k in list(self._sessions) if k.startswith(prefix))]

    def adopt(
        self, service_id: str, sid: str, exit_ip: str, started: float, expires: float, force: bool
    ) -> bool:
        """Take a session version written elsewhere. Between nodes the session started first wins (False:
        ours is older and stays; it is marked for writing again so that the others take it); ``force``
        (the API's rotations) always wins."""
        current = self.session(service_id, sid)
        now = self._clock()
        if not force and current is not None and current.expires > now and current.started < started:
            self.dirty.add((service_id, sid))
            return False
        if force:  # the API's version stands in the store as it is: nothing of ours to write
            self.dirty.discard((service_id, sid))
        session = StickySession(service_id, sid, exit_ip, started, expires)
        self._sessions.setdefault(service_id, {})[sid] = session
        if self.shared is not None:
            key = sticky_key(service_id, sid)
            with self.shared.lock:  # between workers the same rule: the older live session stays
                held = self.shared.get(key, now)
                if force or held is None or held[1] >= started:
                    self.shared.put(key, exit_ip, started, expires, now)
        return True

    def forget(self, service_id: str, sid: str) -> None:
        self._sessions.get(service_id, {}).pop(sid, None)
        self.dirty.discard((service_id, sid))
        if self.shared is not None:
            with self.shared.lock:
                self.shared.delete(sticky_key(service_id, sid))


class StickySync:
    def __init__(
        self, db: Database, router: SharedRouter, node_id: str | None = None, interval: float = 0.25
    ) -> None:
        self.db, self.router, self.interval = db, router, interval
        self.node_id = node_id or "node-" + uuid.uuid4().hex[:12]
        self._mark: datetime | None = None
        self._applied: dict[tuple[str, str], datetime] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._last_cleanup = 0.0

    async def start(self) -> None:
        self._mark = None
        await self.sync()
        self._task = asyncio.ensure_future(self._run())

    def notify(self, *_: object) -> None:
        self._wake.set()

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
        with contextlib.suppress(Exception):
            await self.flush()

    async def flush(self) -> int:
        """Write this node's new/changed sessions (one upsert per batch)."""
        keys, self.router.dirty = self.router.dirty, set()
        now = utcnow()
        values = []
        skipped: list[str] = []
        for service_id, sid in keys:
            s = self.router.session(service_id, sid)
            if s is None:
                continue
            try:
                service_uuid, stored_sid = store_key(service_id, sid)
            except ValueError:
                skipped.append(service_id)
                continue
            values.append(
                {
                    "service_id": service_uuid,
                    "sid": stored_sid,
                    "exit_ip": s.exit_ip,
                    "started_at": _dt(s.started),
                    "expires_at": _dt(s.expires),
                    "ended": False,
                    "writer": self.node_id,
                    "updated_at": now,
                }
            )
        if skipped:
            metrics.STICKY_SKIPPED.inc(len(skipped))
            log.warning(
                "%d sticky session(s) not written to the store (not shared with other nodes nor listed by "
                "the API): service id %r is neither a service uuid nor '<service uuid>/<sub-user pk>'",
                len(skipped),
                skipped[0],
            )
        if not values:
            return 0
        try:
            async with self.db.unit_of_work(write=True) as uow:
                await sticky_sessions.upsert_node_sessions(uow.session, values, API_WRITER)
                await uow.commit()
        except BaseException:
            self.router.dirty |= keys
            raise
        for v in values:
            self._applied[(str(v["service_id"]), str(v["sid"]))] = now
        return len(values)

    async def pull(self) -> int:
        """Apply rows written by the API and by other nodes since the last look."""
        since = self._mark - OVERLAP if self._mark is not None else None
        async with self.db.unit_of_work(write=False) as uow:
            rows = await sticky_sessions.written_by_others(uow.session, self.node_id, since)
        applied = 0
        for row in sorted(rows, key=lambda r: r.updated_at):
            self._mark = max(self._mark or row.updated_at, row.updated_at)
            key = (str(row.service_id), row.sid)
            if self._applied.get(key) == row.updated_at:
                continue
            self._applied[key] = row.updated_at
            applied += 1
            service_id, sid = router_key(*key)
            if sid == PURGE_SID:
                if row.ended:  # "*": the service's and its sub-users' sessions; "<pk>:*": the sub-user's
                    started = _ts(row.updated_at)
                    for owner in [service_id] if "/" in service_id else self.router.family(service_id):
                        for s in list(self.router.list_sessions(owner)):
                            if s.started <= started:
                                self.router.forget(owner, s.sid)
            elif row.ended:
                self.router.forget(service_id, sid)
            else:
                self.router.adopt(
                    service_id,
                    sid,
                    row.exit_ip,
                    _ts(row.started_at),
                    _ts(row.expires_at),
                    row.writer == API_WRITER,
                )
        return applied

    async def cleanup(self) -> None:
        cutoff = utcnow() - timedelta(hours=1)
        async with self.db.unit_of_work(write=True) as uow:
            await sticky_sessions.prune_expired(uow.session, cutoff)
            await uow.commit()
        self._applied = {k: v for k, v in self._applied.items() if v > cutoff}
        if self.router.shared is not None:
            self.router.shared.sweep(self.router._clock())

    async def sync(self) -> None:
        await self.flush()
        await self.pull()
        loop_time = asyncio.get_running_loop().time()
        if loop_time - self._last_cleanup > 60.0:
            self._last_cleanup = loop_time
            await self.cleanup()

    async def _run(self) -> None:
        await periodic.run_forever(
            self.sync,
            lambda: periodic.woken_or_timeout(self._wake, self.interval),
            log,
            "sticky session sync failed; retrying",
            backoff=1.0,
        )
