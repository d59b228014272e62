"""The one writer of `ip_geo` (issue 36), and its reads: the geo database's answers per exit IP / prefix
(never replacing an operator's override), the operator's overrides, and the places of a rotating pool's
exits for the gateway. A write that changes a pool's places stamps ``pool:<kind>`` in the gateway change
log (what the stock triggers do for stock columns), so nodes re-read the pool within a second."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, case, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.place_names import geo_key
from proxyplane.storage.engine_choice import is_postgres
from proxyplane.storage.models import Service
from proxyplane.storage.models.ip_geo import IpGeo
from proxyplane.storage.models.prefixes import ServiceSubnet, StockPrefix
from proxyplane.storage.models.stock import StockIp
from proxyplane.storage.rowcount import rowcount

FIELDS = ("country", "region", "region_code", "city", "asn", "org")
KEYED = (*FIELDS, "city_key")  # the city's geo key is written with its name
BATCH = 2_000  # rows per INSERT (bound parameters: SQLite allows 32,766)


def _insert(session: AsyncSession) -> Any:
    return pg_insert if is_postgres(session) else sqlite_insert


def _keys(row: dict[str, Any]) -> dict[str, str | None]:
    """The city's geo key (what a quote for a city looks its rows up by)."""
    city = row.get("city")
    return {"city_key": geo_key(city) if city else None}


async def store(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> int:
    """Upsert the geo database's answers ({address, geo_source, *FIELDS}); an overridden row stays."""
    now = utcnow()
    written = 0
    for i in range(0, len(rows), BATCH):
        part = [{**r, **_keys(r), "overridden": False, "updated_at": now} for r in rows[i : i + BATCH]]
        stmt = _insert(session)(IpGeo).values(part)
        stmt = stmt.on_conflict_do_update(
            index_elements=["address", "geo_source"],
            set_={**{f: getattr(stmt.excluded, f) for f in KEYED}, "updated_at": stmt.excluded.updated_at},
            where=IpGeo.overridden.is_(False),
        )
        await session.execute(stmt)
        written += len(part)
    return written


async def override(session: AsyncSession, address: str, geo_source: str, values: dict[str, Any]) -> IpGeo:
    """The operator's location of one address for one source (kept over later database refreshes)."""
    row = {"address": address, "geo_source": geo_source, **{f: values.get(f) for f in FIELDS},
           **_keys(values), "overridden": True, "updated_at": utcnow()}
    stmt = _insert(session)(IpGeo).values(row)
    stmt = stmt.on_conflict_do_update(
        index_elements=["address", "geo_source"], set_={k: v for k, v in row.items() if k not in
                                                        ("address", "geo_source")})
    await session.execute(stmt)
    got = await session.get(IpGeo, (address, geo_source), populate_existing=True)
    assert got is not None
    return got


async def for_address(session: AsyncSession, address: str) -> list[IpGeo]:
    rows = await session.execute(select(IpGeo).where(IpGeo.address == address).order_by(IpGeo.geo_source))
    return list(rows.scalars())


async def pool_places(session: AsyncSession, pool: str, geo_source: str) -> list[tuple[Any, ...]]:
    """(address, region, region_code, city, asn) of the pool's live exits that have a place."""
    query = (
        select(StockIp.address, IpGeo.region, IpGeo.region_code, IpGeo.city, IpGeo.asn)
        .join(IpGeo, (IpGeo.address == StockIp.address) & (IpGeo.geo_source == geo_source))
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
    )
    return [tuple(r) for r in await session.execute(query)]


async def pools_of(session: AsyncSession, addresses: Iterable[str]) -> set[str]:
    wanted = list(addresses)
    kinds: set[str] = set()
    for i in range(0, len(wanted), BATCH):
        q = select(StockIp.product_kind).where(StockIp.address.in_(wanted[i : i + BATCH])).distinct()
        kinds.update(await session.scalars(q))
    return kinds


async def log_pools(session: AsyncSession, kinds: Iterable[str]) -> None:
    """Stamp ``pool:<kind>`` in gateway_changes, as the stock triggers of migration 0012c do."""
    await log_keys(session, (f"pool:{kind}" for kind in kinds))


async def prefix_services(session: AsyncSession, prefixes: Iterable[str]) -> set[str]:
    """The ids (text) of the services holding a live subnet of one of ``prefixes``: their gateway entries
    carry the prefixes' places (gateway/subnets.py)."""
    wanted = list(prefixes)
    out: set[str] = set()
    for i in range(0, len(wanted), BATCH):
        query = (
            select(ServiceSubnet.service_id)
            .join(StockPrefix, StockPrefix.id == ServiceSubnet.prefix_id)
            .where(StockPrefix.prefix.in_(wanted[i : i + BATCH]), ServiceSubnet.released_at.is_(None))
            .distinct()
        )
        out.update(str(sid) for sid in await session.scalars(query))
    return out


async def log_keys(session: AsyncSession, keys: Iterable[str]) -> None:
    """Stamp each key (a service id as text, or ``pool:<kind>``) in gateway_changes: running nodes
    re-read it within a second."""
    for key in sorted(set(keys)):
        if is_postgres(session):
            stmt = text(
                "INSERT INTO gateway_changes (key, seq, xid) VALUES (:k, nextval('gateway_change_seq'), "
                "pg_current_xact_id()::text::bigint) ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, "
                "xid = excluded.xid"
            )
        else:
            stmt = text(
                "INSERT INTO gateway_changes (key, seq, xid) VALUES (:k, "
                "(SELECT coalesce(max(seq), 0) + 1 FROM gateway_changes), 0) "
                "ON CONFLICT (key) DO UPDATE SET seq = excluded.seq"
            )
        await session.execute(stmt, {"k": key})


async def set_stock_country(session: AsyncSession, address: str, geo_source: str, country: str) -> int:
    """The stock row's country for ``geo_source`` follows an override (its free counts by trigger)."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    result = await session.execute(
        update(StockIp).where(StockIp.address == address, col != country).values({col: country})
    )
    return rowcount(result)


async def pool_addresses(session: AsyncSession, pool: str) -> list[str]:
    query = select(StockIp.address).where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
    return list(await session.scalars(query.order_by(StockIp.id)))


async def city_counts(
    session: AsyncSession, pool: str, geo_source: str, country: str | None = None, free_only: bool = True
) -> list[tuple[str, str | None, str | None, int]]:
    """(stock country, region, city, IPs) of a pool's live stock that the geo data places, per city; only
    IPs with a free slot when ``free_only``. A grouped scan of the pool (not the O(1) free counts)."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    query = (
        select(col, IpGeo.region, IpGeo.city, func.count())
        .join(IpGeo, (IpGeo.address == StockIp.address) & (IpGeo.geo_source == geo_source))
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None), IpGeo.city.is_not(None))
        .group_by(col, IpGeo.region, IpGeo.city)
    )
    if free_only:
        query = query.where(StockIp.assigned_count < StockIp.capacity)
    if country is not None:
        query = query.where(col == country)
    return [(str(c), r, ci, int(n)) for c, r, ci, n in await session.execute(query)]


async def place_counts(
    session: AsyncSession, pool: str, geo_source: str, country: str, city: str | None = None
) -> list[tuple[str | None, str | None, str | None, int]]:
    """(region, region code, city, IPs with a free slot) of a static pool's live stock in one stock
    country that the geo data places, per place: what a static order's region/city is matched against.
    With ``city`` (a geo key) only that city's rows, found by ip_geo's city_key index, so the read
    follows the city's stock, not the country's; without, a grouped scan of the country's stock."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    free = [StockIp.product_kind == pool, StockIp.retired_at.is_(None), col == country,
            StockIp.assigned_count < StockIp.capacity]
    if city is None:
        query = (
            select(IpGeo.region, IpGeo.region_code, IpGeo.city, func.count())
            .select_from(StockIp)
            .join(IpGeo, (IpGeo.address == StockIp.address) & (IpGeo.geo_source == geo_source))
            .where(*free)
            .group_by(IpGeo.region, IpGeo.region_code, IpGeo.city)
        )
    else:  # each of the city's rows looks its stock row up by address alone (unique index), so no plan
        # scans the stock whatever the statistics say (a join planned on a fresh import's stale ones
        # scanned the pool once per row: 0.6 s for 200 rows on PostgreSQL); the row's state is tested after
        held = (select(case((and_(*free), 1), else_=0)).where(StockIp.address == IpGeo.address)
                .correlate(IpGeo).scalar_subquery())
        query = (
            select(IpGeo.region, IpGeo.region_code, IpGeo.city, func.sum(held))
            .where(IpGeo.geo_source == geo_source, IpGeo.city_key == city)
            .group_by(IpGeo.region, IpGeo.region_code, IpGeo.city)
        )
    rows = await session.execute(query)
    return [(r, rc, ci, int(n)) for r, rc, ci, n in rows if n]


async def country_place_counts(
    session: AsyncSession, pool: str, geo_source: str
) -> list[tuple[str, str | None, str | None, str | None, int]]:
    """(stock country, region, region code, city, IPs with a free slot) of a static pool's live stock
    that the geo data places, per place: the countries listing within a region or city."""
    col = StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind
    query = (
        select(col, IpGeo.region, IpGeo.region_code, IpGeo.city, func.count())
        .select_from(StockIp)
        .join(IpGeo, (IpGeo.address == StockIp.address) & (IpGeo.geo_source == geo_source))
        .where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
        .where(StockIp.assigned_count < StockIp.capacity)
        .group_by(col, IpGeo.region, IpGeo.region_code, IpGeo.city)
    )
    return [(str(c), r, rc, ci, int(n)) for c, r, rc, ci, n in await session.execute(query)]


async def prefix_places(
    session: AsyncSession, geo_source: str, country: str | None
) -> list[tuple[int, str, str, int, int, str | None, str | None, str | None]]:
    """(prefix id, stock country, prefix, subnet length, live subnets, region, region code, city) of the
    IPv6 prefixes on sale in one stock country (None: every one) that the geo data places (by the
    prefix's own row): what a proxy_ipv6 order's region/city is matched against."""
    col = StockPrefix.country_ripe if geo_source == "ripe" else StockPrefix.country_maxmind
    live = (
        select(func.count())
        .where(ServiceSubnet.prefix_id == StockPrefix.id, ServiceSubnet.released_at.is_(None))
        .scalar_subquery()
    )
    query = (
        select(StockPrefix.id, col, StockPrefix.prefix, StockPrefix.subnet_len, live, IpGeo.region,
               IpGeo.region_code, IpGeo.city)
        .select_from(StockPrefix)
        .join(IpGeo, (IpGeo.address == StockPrefix.prefix) & (IpGeo.geo_source == geo_source))
        .where(StockPrefix.retired_at.is_(None))
    )
    if country is not None:
        query = query.where(col == country)
    return [(int(pid), str(c), str(p), int(n), int(held or 0), r, rc, ci)
            for pid, c, p, n, held, r, rc, ci in await session.execute(query)]


async def subnet_places(
    session: AsyncSession, service_ids: Sequence[Any] | None
) -> list[tuple[Any, str, str | None, str | None, str | None, int | None]]:
    """(service id, subnet, region, region code, city, asn) of the live IPv6 subnets of ``service_ids``
    (None: every service) whose prefix the geo data places, by each service's geo source: a subnet lies
    where its routed prefix does (issue 36)."""
    query = (
        select(ServiceSubnet.service_id, ServiceSubnet.subnet, IpGeo.region, IpGeo.region_code, IpGeo.city,
               IpGeo.asn)
        .select_from(ServiceSubnet)
        .join(StockPrefix, StockPrefix.id == ServiceSubnet.prefix_id)
        .join(Service, Service.service_id == ServiceSubnet.service_id)
        .join(IpGeo, (IpGeo.address == StockPrefix.prefix) & (IpGeo.geo_source == Service.geo_source))
        .where(ServiceSubnet.released_at.is_(None))
    )
    if service_ids is None:
        return [tuple(r) for r in await session.execute(query)]  # type: ignore[misc]
    wanted = list(service_ids)
    out: list[tuple[Any, str, str | None, str | None, str | None, int | None]] = []
    for i in range(0, len(wanted), 500):
        part = query.where(ServiceSubnet.service_id.in_(wanted[i : i + 500]))
        out += [tuple(r) for r in await session.execute(part)]  # type: ignore[misc]
    return out
