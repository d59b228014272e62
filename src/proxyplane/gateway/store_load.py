"""Reading service entries from the store: plain-column Core selects, streamed in partitions, for all
loaded services (a node's cold start) or only the given ones (an incremental reload).

No ORM objects are built. Passwords stay sealed (``ServiceEntry.sealed``): the access table decrypts one
on its first use, so a cold start does not pay a decryption per service. Rotating services share one
exit-pool dict per (pool, geo source) (``Pools``); a pool is read once, and refreshed in place when the
change log says its stock changed.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.security import SecretBox
from proxyplane.storage.models import Service, ServiceIp, ServiceWhitelist, StockIp
from proxyplane.storage.models.billing import ServiceAddon
from proxyplane.storage.models.gateway import ProxySettings

from .access import ServiceEntry

LOADED_STATUSES = ("active", "suspended")  # suspended: known, refused with 403; others: not in the table
PARTITION = 20_000  # rows per streamed partition
IN_CHUNK = 500  # ids per IN (...) list

Loaded = dict[uuid.UUID, tuple[ServiceEntry, datetime | None]]
_NO_WHITELIST: frozenset[str] = frozenset()


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _country(cache: dict[Any, str], value: Any) -> str:
    out = cache.get(value)
    if out is None:
        out = cache[value] = sys.intern((value or "").lower())
    return out


def connection_limit(allowed: int, params: dict[str, Any]) -> int:
    """The plan's allowance, or the customer's own lower limit (parameters["connection_limit"], set by
    domains/connections)."""
    own = params.get("connection_limit")
    return allowed if own is None else min(allowed, int(own))


def is_active(status: str, end: datetime | None, now: datetime) -> bool:
    return status == "active" and (end is None or end > now)


async def _stream(session: AsyncSession, query: Any) -> AsyncIterator[Sequence[Any]]:
    result = await session.stream(query.execution_options(yield_per=PARTITION))
    async for part in result.partitions(PARTITION):
        yield part


async def _scoped(
    session: AsyncSession, query: Any, column: Any, ids: list[uuid.UUID] | None
) -> AsyncIterator[Sequence[Any]]:
    """All rows of ``query`` (ids None), or those with ``column`` in ``ids`` (IN lists of IN_CHUNK)."""
    if ids is None:
        async for part in _stream(session, query):
            yield part
        return
    for i in range(0, len(ids), IN_CHUNK):
        yield (await session.execute(query.where(column.in_(ids[i : i + IN_CHUNK])))).all()


async def active_addons(
    session: AsyncSession, ids: Iterable[uuid.UUID] | None
) -> dict[uuid.UUID, dict[str, int]]:
    """{service_id: {"udp": 0/1, "whitelist_slots": n, "connections": n}} of the active add-ons of ``ids``
    (or of every service when ``ids`` is None: a full load only)."""
    out: dict[uuid.UUID, dict[str, int]] = {}
    query = select(
        ServiceAddon.service_id, ServiceAddon.kind, ServiceAddon.quantity, ServiceAddon.parameters
    ).where(ServiceAddon.status == "active")
    async for part in _scoped(session, query, ServiceAddon.service_id, None if ids is None else list(ids)):
        for service_id, kind, quantity, params in part:
            params = json.loads(params) if isinstance(params, str) else dict(params or {})
            grants = out.setdefault(_uuid(service_id), {"udp": 0, "whitelist_slots": 0, "connections": 0})
            if kind == "udp":
                grants["udp"] = 1
            elif kind == "extra_whitelist_slots":
                grants["whitelist_slots"] += int(params.get("whitelist_slots", quantity or 0))
            elif kind == "extra_connections":
                grants["connections"] += int(params.get("connections", quantity or 0))
    return out


class Pools:
    """Exit pools of rotating services: {(pool, geo_source): {ip: country}}, one shared dict each."""

    def __init__(self) -> None:
        self.pools: dict[tuple[str, str], dict[str, str]] = {}

    async def get(self, session: AsyncSession, pool: str, geo_source: str) -> dict[str, str]:
        key = (pool, geo_source)
        if key not in self.pools:
            self.pools[key] = await exit_pool(session, pool, geo_source)
        return self.pools[key]

    async def refresh(self, session: AsyncSession, pool: str) -> None:
        """Re-read ``pool`` in place: every entry holding its dict sees the new stock at once."""
        for (name, geo), current in self.pools.items():
            if name == pool:
                fresh = await exit_pool(session, name, geo)
                current.clear()
                current.update(fresh)


async def exit_pool(session: AsyncSession, pool: str, geo_source: str) -> dict[str, str]:
    """Exit IPs of a rotating service: the unretired stock of its pool, with countries by its geo source."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    query = (
        select(StockIp.address, col)
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
        .order_by(StockIp.id)
    )
    out: dict[str, str] = {}
    countries: dict[Any, str] = {}
    async for part in _stream(session, query):
        for address, country in part:
            out[address] = _country(countries, country)
    return out


async def load_entries(
    session: AsyncSession,
    box: SecretBox | None,
    ids: Iterable[uuid.UUID] | None = None,
    pools: Pools | None = None,
) -> Loaded:
    """{service_id: (entry, current_period_end)} of the loaded statuses (all, or only ``ids``).

    ``box`` None: passwords stay sealed (the node's table decrypts on first use); given: decrypted now."""
    id_list = None if ids is None else list(dict.fromkeys(ids))
    if id_list is not None and not id_list:
        return {}
    pools = pools or Pools()
    countries: dict[Any, str] = {}
    ips: dict[uuid.UUID, dict[str, str]] = {}
    ip_q = (
        select(ServiceIp.service_id, ServiceIp.address, ServiceIp.country)
        .where(ServiceIp.released_at.is_(None))
        .order_by(ServiceIp.id)
    )
    async for part in _scoped(session, ip_q, ServiceIp.service_id, id_list):
        for service_id, address, country in part:
            exits = ips.get(service_id)
            if exits is None:
                exits = ips[service_id] = {}
            exits[address] = _country(countries, country)
    whitelist: dict[uuid.UUID, set[str]] = {}
    wl_q = select(ServiceWhitelist.service_id, ServiceWhitelist.ip)
    async for part in _scoped(session, wl_q, ServiceWhitelist.service_id, id_list):
        for service_id, ip in part:
            whitelist.setdefault(service_id, set()).add(ip)
    addons = await active_addons(session, id_list)
    svc_q = (
        select(
            Service.service_id,
            Service.product_kind,
            Service.status,
            Service.login,
            Service.password_enc,
            Service.max_connections,
            Service.parameters,
            Service.current_period_end,
            Service.geo_source,
            ProxySettings.session_mode,
            ProxySettings.pin,
            ProxySettings.sticky_ttl_seconds,
        )
        .outerjoin(ProxySettings, ProxySettings.service_id == Service.service_id)
        .where(Service.status.in_(LOADED_STATUSES))
    )
    now = utcnow()
    out: Loaded = {}
    no_grants: dict[str, int] = {}
    async for part in _scoped(session, svc_q, Service.service_id, id_list):
        for (
            sid,
            product_kind,
            status,
            login,
            password_enc,
            max_conn,
            params,
            end,
            geo_source,
            mode,
            pin,
            ttl,
        ) in part:
            params = params or {}
            grants = addons.get(sid, no_grants)
            if product_kind == "proxy_rotating":
                exits = await pools.get(session, str(params.get("exit_pool", "proxy_datacenter")), geo_source)
                kind = "rotating"
            else:
                exits, kind = ips.get(sid, {}), "static"
            wl = whitelist.get(sid)
            entry = ServiceEntry(
                service_id=str(sid),
                kind=kind,  # type: ignore[arg-type]
                login=login,
                password="" if box is None else box.decrypt(password_enc),
                exit_ips=exits,
                whitelist=_NO_WHITELIST if wl is None else frozenset(wl),
                active=is_active(status, end, now),
                session_mode=mode or "rotating",
                pin=pin,
                sticky_ttl=600 if ttl is None else ttl,
                max_connections=connection_limit(max_conn + grants.get("connections", 0), params),
                udp_allowed=bool(grants.get("udp") or params.get("udp")),
                sealed=password_enc if box is None else None,
            )
            out[_uuid(sid)] = (entry, end)
    return out
