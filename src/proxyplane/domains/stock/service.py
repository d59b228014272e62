"""Stock queries and the atomic allocation of exit IPs.

Allocation never oversells and is set-based (domains/stock/allocate.py): one conditional
`UPDATE stock_ips SET assigned_count = assigned_count + 1 WHERE id IN (...) AND assigned_count < capacity`
takes every IP of an order, least-shared IPs first (the CHECK constraint `assigned_count <= capacity`
backs it up). On PostgreSQL candidates are locked with FOR UPDATE SKIP LOCKED, so concurrent orders of
different customers never queue on the same rows; when that comes back short (rows with room held by
other orders), `allocate` rolls back to a savepoint and waits for such rows in id order, so two waiting
orders never lock in a cycle. On SQLite the writing unit of work runs under BEGIN IMMEDIATE (one writer).
A service never gets the same IP twice (unique (service_id, ip_id)).
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.stock import subnets
from proxyplane.domains.stock.allocate import (
    SAVEPOINT,
    Allocated,
    shortfall,
    skips_held_rows,
    take,
    take_waiting,
)
from proxyplane.domains.stock.countries import normalize_country
from proxyplane.domains.stock.free_counts import free_counts
from proxyplane.storage.models import StockIp
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.models.stock import GEO_SOURCES, POOL_KINDS
from proxyplane.storage.repos import savepoints
from proxyplane.storage.repos import stock as stock_rows

SOLD_KINDS: tuple[str, ...] = (*POOL_KINDS, IPV6_KIND)  # sold per IP, or per subnet (IPv6, issue 16)

# default sharing: how many services may use one IP of each pool
DEFAULT_CAPACITY: dict[str, int] = {"proxy_datacenter": 5, "proxy_isp": 3, "proxy_personal": 1}


class OutOfStock(ValidationFailed):
    code = "insufficient_stock"


def check_pool(product_kind: str, geo_source: str = "maxmind") -> None:
    if product_kind not in SOLD_KINDS:
        raise ValidationFailed(
            f"unknown product_kind {product_kind!r}; expected one of {', '.join(SOLD_KINDS)}",
            field="product_kind",
        )
    if geo_source not in GEO_SOURCES:
        raise ValidationFailed(
            f"unknown geo_source {geo_source!r}; expected one of {', '.join(GEO_SOURCES)}",
            field="geo_source",
        )


def _country_col(geo_source: str):  # type: ignore[no-untyped-def]
    return StockIp.country_ripe if geo_source == "ripe" else StockIp.country_maxmind


async def availability(
    session: AsyncSession,
    product_kind: str,
    geo_source: str,
    countries: Collection[str] | Mapping[str, int] | None = None,
) -> dict[str, int]:
    """{country: IPs that can take one more service} for a pool, by a geo source (only `countries`,
    when given; countries without one left out).

    The maintained free counts (domains/stock/free_counts.py: trigger-written deltas, exact at the
    reader's snapshot): one grouped sum over a few rows per country, O(1) in the stock's size.
    `countries` as {country: needed} (a quote): each count capped at `needed` (at least 1), so a quote
    shows the count when the segment can be fulfilled and the exact free number when not. Allocation
    stays the authority at order time (allocate never oversells, whatever a quote saw). IPv6: free
    subnets of the prefixes on sale (domains/stock/subnets.py)."""
    if product_kind == IPV6_KIND:
        return await subnets.availability(session, geo_source, countries)
    counts = await free_counts(session, product_kind, geo_source, countries)
    if isinstance(countries, Mapping):
        return {c: min(n, max(1, int(countries[c]))) for c, n in counts.items()}
    return counts


async def has_stock(session: AsyncSession) -> bool:
    """Any IP in stock at all (one row looked at, not a count of the stock)."""
    return (await session.scalar(select(StockIp.id).limit(1))) is not None


async def allocate(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    exclude: set[int] | None = None,
) -> list[Allocated]:
    """Take `count` IPs per (country, count) for the service, never one of `exclude` (e.g. the IPs a
    service holds or has held), or raise OutOfStock (the caller's transaction then rolls back
    everything, including any increments already made). The one allocator: orders, catalog purchases,
    added IPs and refreshes all take IPs here (see allocate.py: one statement in the common case)."""
    await session.flush()  # the service row the allocations point at
    if product_kind == IPV6_KIND:
        return await take_subnets(session, service_id, geo_source, segments)
    excl = frozenset(exclude or ())
    held_elsewhere = skips_held_rows(session)  # a take may come back short while others hold stock rows
    if held_elsewhere:
        await savepoints.open_savepoint(session, SAVEPOINT)
    got = await take(session, service_id, product_kind, geo_source, segments, exclude=excl)
    missing = shortfall(segments, got)
    if missing:
        if held_elsewhere:  # wait for rows other orders hold, holding none out of id order ourselves
            await savepoints.rollback_to(session, SAVEPOINT)
            got, missing = [], [(c, n) for c, n in segments if n > 0]
        more, missing = await take_waiting(
            session,
            service_id,
            product_kind,
            geo_source,
            missing,
            exclude=excl | {a.ip_id for a in got},
        )
        got += more
    if missing:
        country, count = missing[0]
        raise OutOfStock(
            f"not enough {product_kind} IPs in stock in {country} ({geo_source}): {count} more needed",
            country=country,
        )
    return got


async def take_subnets(
    session: AsyncSession,
    service_id: uuid.UUID,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
) -> list[Allocated]:
    """IPv6: `count` subnets per (country, count), never one the service holds or held, or OutOfStock."""
    held = await subnets.held_subnets(session, service_id)
    got = await subnets.take(session, service_id, geo_source, segments, exclude=held)
    missing = shortfall(segments, got)
    if missing:
        country, count = missing[0]
        raise OutOfStock(
            f"not enough {IPV6_KIND} subnets in stock in {country} ({geo_source}): {count} more needed",
            country=country,
        )
    return got


async def release(session: AsyncSession, service_id: uuid.UUID, product_kind: str | None = None) -> int:
    """Free every live IP of a service (idempotent), in two statements. Returns how many were freed.
    An IPv6 service (`product_kind` proxy_ipv6, or None: not known here) releases its subnets too."""
    if product_kind == IPV6_KIND:
        return await subnets.release(session, service_id)
    if product_kind is None:
        await subnets.release(session, service_id)
    return await stock_rows.release_service(session, service_id, utcnow())


# --- operator: import, add a range, retire ------------------------------------------------------


def parse_ipv4(text: str) -> str:
    try:
        return str(ipaddress.IPv4Address(text.strip()))
    except ValueError as exc:
        raise ValueError(f"not an IPv4 address: {text!r}") from exc


def expand_range(spec: str) -> list[str]:
    """`127.0.1.0/24` (usable hosts of the network, or every address of a /31 or /32) or
    `127.0.1.10-127.0.1.20` (inclusive)."""
    spec = spec.strip()
    if "-" in spec:
        lo, hi = (ipaddress.IPv4Address(p.strip()) for p in spec.split("-", 1))
        if hi < lo:
            raise ValueError(f"empty range {spec!r}")
        if int(hi) - int(lo) >= 65536:
            raise ValueError("a range may hold at most 65536 addresses")
        return [str(ipaddress.IPv4Address(i)) for i in range(int(lo), int(hi) + 1)]
    net = ipaddress.IPv4Network(spec, strict=False)
    if net.num_addresses > 65536:
        raise ValueError("a range may hold at most 65536 addresses")
    hosts = list(net.hosts()) if net.prefixlen < 31 else list(net)
    return [str(h) for h in hosts]


def pool_capacity(product_kind: str, capacity: int | None) -> int:
    """The capacity of IPs added to a pool (checked): the pool's default unless given, always 1 for
    dedicated IPs."""
    check_pool(product_kind)
    cap = DEFAULT_CAPACITY[product_kind] if capacity is None else capacity
    if product_kind == "proxy_personal":
        cap = 1  # dedicated: exactly one service
    if cap < 1:
        raise ValueError("capacity must be at least 1")
    return cap


@dataclass(frozen=True)
class StockLine:
    address: str
    country_maxmind: str
    country_ripe: str


async def add_ips(
    session: AsyncSession,
    product_kind: str,
    lines: Iterable[StockLine],
    *,
    capacity: int | None = None,
    port: int | None = None,
    reactivate: bool = True,
) -> tuple[int, int]:
    """Add IPs to a pool; (added, skipped because already present). A retired IP that is added again
    is reactivated in the given pool."""
    cap = pool_capacity(product_kind, capacity)
    added = skipped = 0
    for line in lines:
        address = parse_ipv4(line.address)
        mm, ripe = normalize_country(line.country_maxmind), normalize_country(line.country_ripe)
        existing = (
            await session.execute(select(StockIp).where(StockIp.address == address))
        ).scalar_one_or_none()
        if existing is not None:
            if reactivate and existing.retired_at is not None and existing.assigned_count == 0:
                stock_rows.reactivate(existing, product_kind, mm, ripe, cap, port)
                added += 1
            else:
                skipped += 1
            continue
        stock_rows.add_stock_ip(session, address, product_kind, mm, ripe, cap, port)
        added += 1
    await session.flush()
    return added, skipped


async def retire_ips(session: AsyncSession, addresses: Iterable[str]) -> int:
    """Stop selling these IPs (services holding them keep them until they end). Idempotent."""
    wanted = [parse_ipv4(a) for a in addresses]
    if not wanted:
        return 0
    return await stock_rows.retire_addresses(session, wanted, utcnow())


async def pool_summary(session: AsyncSession) -> list[dict[str, object]]:
    rows = await session.execute(
        select(
            StockIp.product_kind,
            func.count(),
            func.sum(StockIp.capacity),
            func.sum(StockIp.assigned_count),
        )
        .where(StockIp.retired_at.is_(None))
        .group_by(StockIp.product_kind)
        .order_by(StockIp.product_kind)
    )
    return [
        {"product_kind": k, "ips": int(n), "slots": int(cap or 0), "assigned": int(used or 0)}
        for k, n, cap, used in rows.all()
    ]
