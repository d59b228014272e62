"""The store-backed access table: load every servable service into the AccessTable and keep it current.

Change detection (docs/decisions.md "Gateway"):
- every change to what a service grants bumps ``services.updated_at`` in its transaction; each node polls
  ``SELECT service_id, updated_at FROM services WHERE updated_at > :mark - OVERLAP`` every
  ``poll_interval`` (0.25 s) and reloads the services whose ``updated_at`` differs from the one it holds.
  The overlap window (5 s) covers transactions that commit after a newer marker was already seen and
  small clock differences between API nodes;
- a fingerprint of service_ips, service_whitelist, stock_ips and service_addons (row count + max id) is
  checked on every poll too: a change not announced through ``updated_at`` triggers a full reload;
- an active service whose term ends is switched off locally at its end time (no row changes then);
- ``notify(service_id)`` is the in-process fast path (``platform.on("entitlements_changed")``);
- a full reload runs every ``full_reload_interval`` (60 s) as a backstop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.security import SecretBox
from proxyplane.storage.engine import Database
from proxyplane.storage.models import Service, ServiceIp, ServiceWhitelist, StockIp
from proxyplane.storage.models.gateway import ProxySettings

from .access import AccessTable, ServiceEntry

log = logging.getLogger(__name__)

LOADED_STATUSES = ("active", "suspended")  # suspended: known, refused with 403; others: not in the table
STATIC_KINDS = ("proxy_datacenter", "proxy_isp", "proxy_personal")
OVERLAP = timedelta(seconds=5)


async def active_addons(
    session: AsyncSession, ids: Iterable[uuid.UUID] | None
) -> dict[uuid.UUID, dict[str, int]]:
    """{service_id: {"udp": 0/1, "whitelist_slots": n, "connections": n}} from the add-on table (issue 5).
    Read with plain SQL in a savepoint so that a database without that table simply has no add-ons."""
    out: dict[uuid.UUID, dict[str, int]] = {}
    try:
        async with session.begin_nested():
            rows = (
                await session.execute(
                    text(
                        "SELECT service_id, kind, quantity, parameters FROM service_addons "
                        "WHERE status = 'active'"
                    )
                )
            ).all()
    except Exception:  # noqa: BLE001  (no add-on table yet)
        return out
    wanted = None if ids is None else {str(i) for i in ids}
    for service_id, kind, quantity, params in rows:
        sid = service_id if isinstance(service_id, uuid.UUID) else uuid.UUID(str(service_id))
        if wanted is not None and str(sid) not in wanted:
            continue
        params = json.loads(params) if isinstance(params, str) else dict(params or {})
        grants = out.setdefault(sid, {"udp": 0, "whitelist_slots": 0, "connections": 0})
        if kind == "udp":
            grants["udp"] = 1
        elif kind == "extra_whitelist_slots":
            grants["whitelist_slots"] += int(params.get("whitelist_slots", quantity or 0))
        elif kind == "extra_connections":
            grants["connections"] += int(params.get("connections", quantity or 0))
    return out


def connection_limit(allowed: int, params: dict[str, Any]) -> int:
    """The plan's allowance, or the customer's own lower limit (parameters["connection_limit"], set by
    domains/connections)."""
    own = params.get("connection_limit")
    return allowed if own is None else min(allowed, int(own))


def is_active(svc: Service, now: datetime) -> bool:
    end = svc.current_period_end
    return svc.status == "active" and (end is None or end > now)


async def load_entries(
    session: AsyncSession, box: SecretBox, ids: Iterable[uuid.UUID] | None = None
) -> dict[uuid.UUID, tuple[ServiceEntry, Any]]:
    """{service_id: (entry, current_period_end)} of the loaded statuses (all, or only ``ids``)."""
    query = (
        select(Service, ProxySettings)
        .outerjoin(ProxySettings, ProxySettings.service_id == Service.service_id)
        .where(Service.status.in_(LOADED_STATUSES))
    )
    id_list = None if ids is None else list(ids)
    if id_list is not None:
        if not id_list:
            return {}
        query = query.where(Service.service_id.in_(id_list))
    rows = (await session.execute(query)).all()
    sids = [svc.service_id for svc, _ in rows]
    if not sids:
        return {}
    scope = None if id_list is None else sids
    ip_q = (
        select(ServiceIp.service_id, ServiceIp.address, ServiceIp.country)
        .where(ServiceIp.released_at.is_(None))
        .order_by(ServiceIp.id)
    )
    wl_q = select(ServiceWhitelist.service_id, ServiceWhitelist.ip)
    if scope is not None:
        ip_q = ip_q.where(ServiceIp.service_id.in_(scope))
        wl_q = wl_q.where(ServiceWhitelist.service_id.in_(scope))
    ips: dict[uuid.UUID, dict[str, str]] = {}
    for service_id, address, country in (await session.execute(ip_q)).all():
        ips.setdefault(service_id, {})[address] = (country or "").lower()
    whitelist: dict[uuid.UUID, set[str]] = {}
    for service_id, ip in (await session.execute(wl_q)).all():
        whitelist.setdefault(service_id, set()).add(ip)
    addons = await active_addons(session, scope)
    pools: dict[tuple[str, str], dict[str, str]] = {}
    now = utcnow()
    out: dict[uuid.UUID, tuple[ServiceEntry, Any]] = {}
    for svc, settings in rows:
        params = dict(svc.parameters or {})
        grants = addons.get(svc.service_id, {})
        if svc.product_kind == "proxy_rotating":
            key = (str(params.get("exit_pool", "proxy_datacenter")), svc.geo_source)
            if key not in pools:
                pools[key] = await exit_pool(session, *key)
            exits, kind = pools[key], "rotating"
        else:
            exits, kind = ips.get(svc.service_id, {}), "static"
        mode = settings.session_mode if settings is not None else "rotating"
        entry = ServiceEntry(
            service_id=str(svc.service_id),
            kind=kind,  # type: ignore[arg-type]
            login=svc.login,
            password=box.decrypt(svc.password_enc),
            exit_ips=exits,
            whitelist=frozenset(whitelist.get(svc.service_id, ())),
            active=is_active(svc, now),
            session_mode=mode,  # type: ignore[arg-type]
            pin=settings.pin if settings is not None else None,
            sticky_ttl=settings.sticky_ttl_seconds if settings is not None else 600,
            max_connections=connection_limit(svc.max_connections + grants.get("connections", 0), params),
            udp_allowed=bool(grants.get("udp") or params.get("udp")),
        )
        out[svc.service_id] = (entry, svc.current_period_end)
    return out


async def exit_pool(session: AsyncSession, pool: str, geo_source: str) -> dict[str, str]:
    """Exit IPs of a rotating service: the unretired stock of its pool, with countries by its geo source."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    rows = await session.execute(
        select(StockIp.address, col)
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
        .order_by(StockIp.id)
    )
    return {address: (country or "").lower() for address, country in rows.all()}


async def fingerprint(session: AsyncSession) -> tuple[Any, ...]:
    """Cheap summary of the child tables; it changes whenever a row is added or removed."""
    parts: list[Any] = []
    for model, live in (
        (ServiceIp, ServiceIp.released_at.is_(None)),
        (ServiceWhitelist, None),
        (StockIp, StockIp.retired_at.is_(None)),
    ):
        q = select(func.count(), func.max(model.id))
        if live is not None:
            q = q.where(live)
        parts.extend((await session.execute(q)).one())
    try:
        async with session.begin_nested():
            parts.extend(
                (
                    await session.execute(
                        text("SELECT count(*), max(activated_at), max(canceled_at) FROM service_addons")
                    )
                ).one()
            )
    except Exception:  # noqa: BLE001  (no add-on table yet)
        parts.append(None)
    return tuple(parts)


class StoreSync:
    """Keeps an AccessTable equal to the store. ``await start()`` loads everything; ``close()`` stops."""

    def __init__(
        self,
        db: Database,
        box: SecretBox,
        table: AccessTable | None = None,
        *,
        poll_interval: float = 0.25,
        full_reload_interval: float = 60.0,
    ) -> None:
        self.db, self.box = db, box
        self.table = table or AccessTable()
        self.poll_interval, self.full_reload_interval = poll_interval, full_reload_interval
        self._seen: dict[uuid.UUID, datetime] = {}  # updated_at of each service as last loaded
        self._ends: dict[uuid.UUID, datetime] = {}  # term ends of active services
        self._mark: datetime | None = None
        self._fingerprint: tuple[Any, ...] | None = None
        self._pending: set[uuid.UUID] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_full = 0.0

    async def start(self) -> None:
        await self.full_reload()
        self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def notify(self, service_id: Any = None) -> None:
        """In-process fast path: reload ``service_id`` (or poll) now."""
        if service_id is not None:
            with contextlib.suppress(ValueError):
                self._pending.add(
                    service_id if isinstance(service_id, uuid.UUID) else uuid.UUID(str(service_id))
                )
        self._wake.set()

    async def full_reload(self) -> None:
        async with self.db.unit_of_work(write=False) as uow:
            marks = await self._marks(uow.session, None)
            self._fingerprint = await fingerprint(uow.session)
            loaded = await load_entries(uow.session, self.box)
        self._seen = marks
        self._mark = max(marks.values(), default=None)
        self._ends = {sid: end for sid, (e, end) in loaded.items() if e.active and end is not None}
        self.table.replace_all(entry for entry, _ in loaded.values())
        self._last_full = asyncio.get_running_loop().time()

    async def _marks(self, session: AsyncSession, since: datetime | None) -> dict[uuid.UUID, datetime]:
        q = select(Service.service_id, Service.updated_at)
        if since is not None:
            q = q.where(Service.updated_at > since)
        return {sid: at for sid, at in (await session.execute(q)).all()}

    async def poll(self) -> None:
        """One round: reload changed services (or everything when the fingerprint moved)."""
        loop_time = asyncio.get_running_loop().time()
        if loop_time - self._last_full >= self.full_reload_interval:
            await self.full_reload()
            return
        now = utcnow()
        async with self.db.unit_of_work(write=False) as uow:
            if await fingerprint(uow.session) != self._fingerprint:
                changed = None
            else:
                since = self._mark - OVERLAP if self._mark is not None else None
                marks = await self._marks(uow.session, since)
                changed = {sid for sid, at in marks.items() if self._seen.get(sid) != at}
                changed |= {sid for sid, end in self._ends.items() if end <= now}
                changed |= self._pending
                self._pending = set()
                loaded = await load_entries(uow.session, self.box, changed) if changed else {}
        if changed is None:
            await self.full_reload()
            return
        for sid in changed:
            if sid in marks:
                self._seen[sid] = marks[sid]
                self._mark = max(self._mark or marks[sid], marks[sid])
            self._ends.pop(sid, None)
            if sid in loaded:
                entry, end = loaded[sid]
                self.table.upsert(entry)
                if entry.active and end is not None:
                    self._ends[sid] = end
            else:
                self.table.remove(str(sid))

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_interval)
            self._wake.clear()
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("gateway store poll failed; retrying")
                await asyncio.sleep(1.0)
