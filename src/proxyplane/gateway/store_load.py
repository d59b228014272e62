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
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Text, cast, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.security import SecretBox
from proxyplane.storage.models import Service, ServiceIp, ServiceWhitelist
from proxyplane.storage.models.billing import ServiceAddon
from proxyplane.storage.models.gateway import ProxySettings
from proxyplane.storage.models.quotas import ServiceQuota
from proxyplane.storage.repos import gateway_load, ip_geo
from proxyplane.storage.repos.gateway_load import country as _country
from proxyplane.storage.repos.gateway_load import exit_pool as exit_pool

from . import places
from .access import ServiceEntry
from .client_ips import limit_of as client_ip_limit
from .protocol.username import geo_key
from .quotas_load import QUOTA_COLUMNS, quota_entry
from .speed import limit_of as speed_limit
from .subnets import SubnetExits, load_subnets
from .subusers_load import load_subusers

LOADED_STATUSES = ("active", "suspended")  # suspended: known, refused with 403; others: not in the table
IN_CHUNK = 500  # ids per IN (...) list

Loaded = dict[uuid.UUID, tuple[ServiceEntry, datetime | None]]
_NO_WHITELIST: frozenset[str] = frozenset()


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def connection_limit(allowed: int, params: dict[str, Any]) -> int:
    """The plan's allowance, or the customer's own lower limit (parameters["connection_limit"], set by
    domains/connections)."""
    own = params.get("connection_limit")
    return allowed if own is None else min(allowed, int(own))


def is_active(status: str, end: datetime | None, now: datetime) -> bool:
    return status == "active" and (end is None or end > now)


def _params(raw: Any) -> dict[str, Any]:
    """A JSON column selected as text ("{}" for most rows: no decoding then)."""
    if raw is None or raw == "{}":
        return {}
    return dict(json.loads(raw)) if isinstance(raw, str) else dict(raw)


async def _scoped(
    session: AsyncSession, query: Any, column: Any, ids: list[uuid.UUID] | None
) -> AsyncIterator[Sequence[Any]]:
    """All rows of ``query`` (ids None), or those with ``column`` in ``ids`` (IN lists of IN_CHUNK)."""
    if ids is None:
        async for part in gateway_load.stream(session, query):
            yield part
        return
    conn = await session.connection()
    for i in range(0, len(ids), IN_CHUNK):
        yield (await conn.execute(query.where(column.in_(ids[i : i + IN_CHUNK])))).all()


async def active_addons(
    session: AsyncSession, ids: Iterable[uuid.UUID] | None
) -> dict[uuid.UUID, dict[str, int]]:
    """{service_id: {"udp": 0/1, "whitelist_slots": n, "connections": n}} of the active add-ons of ``ids``
    (or of every service when ``ids`` is None: a full load only)."""
    out: dict[uuid.UUID, dict[str, int]] = {}
    query = select(
        ServiceAddon.service_id, ServiceAddon.kind, ServiceAddon.quantity, cast(ServiceAddon.parameters, Text)
    ).where(ServiceAddon.status == "active")
    async for part in _scoped(session, query, ServiceAddon.service_id, None if ids is None else list(ids)):
        for service_id, kind, quantity, params in part:
            params = _params(params)
            grants = out.setdefault(_uuid(service_id), {"udp": 0, "whitelist_slots": 0, "connections": 0})
            if kind == "udp":
                grants["udp"] = 1
            elif kind == "extra_whitelist_slots":
                grants["whitelist_slots"] += int(params.get("whitelist_slots", quantity or 0))
            elif kind == "extra_connections":
                grants["connections"] += int(params.get("connections", quantity or 0))
    return out


class ExitPool(dict[str, str]):
    """{ip: country} of one rotating pool; ``version`` grows with each in-place refresh (the router's
    cached choices of this dict are valid for one version); ``places`` {ip: (region, region code, city,
    asn)} of the exits the geo data knows (issue 36, gateway/places.py)."""

    __slots__ = ("places", "version")

    def __init__(self, *args: Any, located: dict[str, places.Place] | None = None) -> None:
        super().__init__(*args)
        self.version = 0
        self.places = located or {}


async def pool_places(session: AsyncSession, pool: str, geo_source: str) -> dict[str, places.Place]:
    """The places of the pool's exits as geo keys (what the username's region/city options are)."""
    out: dict[str, places.Place] = {}
    keys: dict[str | None, str] = {None: ""}
    for address, region, code, city, asn in await ip_geo.pool_places(session, pool, geo_source):
        parts = []
        for name in (region, code, city):
            key = keys.get(name)
            if key is None:
                key = keys[name] = sys.intern(geo_key(name))
            parts.append(key)
        out[address] = (parts[0], parts[1], parts[2], int(asn or 0))
    return out


class Pools:
    """Exit pools of rotating services: {(pool, geo_source): {ip: country}}, one shared dict each."""

    def __init__(self) -> None:
        self.pools: dict[tuple[str, str], ExitPool] = {}

    async def get(self, session: AsyncSession, pool: str, geo_source: str) -> dict[str, str]:
        key = (pool, geo_source)
        if key not in self.pools:
            self.pools[key] = ExitPool(await exit_pool(session, pool, geo_source),
                                       located=await pool_places(session, pool, geo_source))
        return self.pools[key]

    async def refresh(self, session: AsyncSession, pool: str) -> None:
        """Re-read ``pool`` in place: every entry holding its dict sees the new stock at once."""
        for (name, geo), current in self.pools.items():
            if name == pool:
                fresh = await exit_pool(session, name, geo)
                current.places = await pool_places(session, name, geo)
                current.clear()
                current.update(fresh)
                current.version += 1


async def load_entries(
    session: AsyncSession,
    box: SecretBox | None,
    ids: Iterable[uuid.UUID] | None = None,
    pools: Pools | None = None,
    stages: dict[str, float] | None = None,
) -> Loaded:
    """{service_id: (entry, current_period_end)} of the loaded statuses (all, or only ``ids``).

    ``box`` None: passwords stay sealed (the node's table decrypts on first use); given: decrypted now.
    ``stages``: filled with the seconds each step took (exit IPs, whitelist, add-ons, services)."""
    clock = time.perf_counter
    mark = clock()

    def lap(name: str) -> None:
        nonlocal mark
        if stages is not None:
            stages[name] = stages.get(name, 0.0) + clock() - mark
        mark = clock()

    id_list = None if ids is None else list(dict.fromkeys(ids))
    if id_list is not None and not id_list:
        return {}
    pools = pools or Pools()
    countries: dict[Any, str] = {}
    ips: dict[Any, dict[str, str]] = {}
    # PostgreSQL, a full load: read apart while the entries are built, filled in below, at the end
    ips_task = await gateway_load.all_exit_ips_apart(session) if id_list is None else None
    if ips_task is None:
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
                exits[address] = countries.get(country) or _country(countries, country)
    lap("exit_ips")
    whitelist: dict[uuid.UUID, set[str]] = {}
    wl_q = select(ServiceWhitelist.service_id, ServiceWhitelist.ip)
    async for part in _scoped(session, wl_q, ServiceWhitelist.service_id, id_list):
        for service_id, ip in part:
            whitelist.setdefault(service_id, set()).add(ip)
    lap("whitelist")
    addons = await active_addons(session, id_list)
    lap("addons")
    subs = await load_subusers(session, box, id_list)  # one select; empty for most stores
    lap("subusers")
    svc_q = (
        select(
            Service.service_id,
            Service.product_kind,
            Service.status,
            Service.login,
            Service.password_enc,
            Service.max_connections,
            cast(Service.parameters, Text),
            Service.current_period_end,
            Service.geo_source,
            ProxySettings.session_mode,
            ProxySettings.pin,
            ProxySettings.sticky_ttl_seconds,
            *QUOTA_COLUMNS,  # the service's quota (issue 32), joined: no select of its own
        )
        .outerjoin(ProxySettings, ProxySettings.service_id == Service.service_id)
        .outerjoin(ServiceQuota, ServiceQuota.service_id == Service.service_id)
        .where(Service.status.in_(LOADED_STATUSES))
    )
    now = utcnow()
    out: Loaded = {}
    no_grants: dict[str, int] = {}
    ipv6: list[uuid.UUID] = []  # proxy_ipv6 services: their subnets are read after the loop
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
            *quota,
        ) in part:
            params = _params(params)
            grants = addons.get(sid, no_grants)
            upstream_pool = params.get("upstream_pool") if product_kind == "proxy_rotating" else None
            if upstream_pool:  # chained through an upstream supplier (issue 36.4): no local exits
                exits, kind = {}, "rotating"
            elif product_kind == "proxy_rotating":
                exits = await pools.get(session, str(params.get("exit_pool", "proxy_datacenter")), geo_source)
                kind = "rotating"
            elif product_kind == "proxy_ipv6":  # exits drawn from its subnets, served like rotating
                exits, kind = SubnetExits(), "rotating"
                ipv6.append(_uuid(sid))
            else:
                exits, kind = (ips.get(sid) or {}) if ips_task is None else {}, "static"
            wl = whitelist.get(sid)
            entry = ServiceEntry(
                str(sid),
                kind,  # type: ignore[arg-type]
                login,
                "" if box is None else box.decrypt(password_enc),
                exits,
                _NO_WHITELIST if wl is None else frozenset(wl),
                is_active(status, end, now),
                mode or "rotating",
                pin,
                600 if ttl is None else ttl,
                connection_limit(max_conn + grants.get("connections", 0), params),
                bool(grants.get("udp") or params.get("udp")),
                password_enc if box is None else None,
            )
            if subs:
                entry.subusers = subs.get(str(sid), ())
            if upstream_pool:
                entry.upstream_pool = str(upstream_pool)
            if quota[0] is not None:  # a metered service
                entry.quota = quota_entry(str(sid), quota, now)
            if "client_ip_limit" in params:  # anti-sharing (issue 32.5; gateway/client_ips.py)
                entry.max_client_ips, entry.client_ip_policy = client_ip_limit(params)
            if "speed_limit_bps" in params:  # a speed limit (issue 32.6; gateway/speed.py)
                entry.speed_bps = speed_limit(params)
            out[_uuid(sid)] = (entry, end)
    lap("services")
    if ipv6:  # one more select only when IPv6 services are loaded (gateway/subnets.py)
        subnets = await load_subnets(session, None if id_list is None else ipv6)
        for key in ipv6:
            out[key][0].exit_ips = subnets.get(key) or SubnetExits()
        lap("subnets")
    if ips_task is not None:
        ips = await ips_task
        lap("exit_ips_wait")
        for sid_key, (entry, _) in out.items():
            if entry.kind == "static":
                entry.exit_ips = ips.get(sid_key) or {}  # not yet published: built here
    return out
