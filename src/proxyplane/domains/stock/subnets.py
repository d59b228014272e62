"""IPv6 stock from routed prefixes (issue 16): import a prefix, count free subnets, allocate and release.

A prefix (`stock_prefixes`) is split into subnets of `subnet_len` bits, numbered from 0; subnets are handed
out in index order by the cursor `next_index`, so a /48 of 65,536 /64s is one row until subnets are sold,
and then one `service_subnets` row per ALLOCATED subnet (never a row per address). A released subnet (its
service cancelled, expired or refreshed) is handed out again before the cursor advances; a subnet whose
service row was deleted outright (its rows went with it) is free too and found below the cursor when the
prefix has nothing else left. Free subnets of a prefix = its subnets - its live rows.

Allocation locks the candidate prefixes of the order's countries first (PostgreSQL: `SELECT ... FOR UPDATE`
in id order, so concurrent IPv6 orders of one country queue briefly and never lock in a cycle; SQLite: one
writer), then reuses released subnets and advances the cursor with a guarded `UPDATE ... WHERE next_index
= :seen`. The partial unique index on live subnets backs it up: no subnet is ever live for two services.
"""

from __future__ import annotations

import ipaddress
import random
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.stock.allocate import Allocated
from proxyplane.domains.stock.countries import normalize_country
from proxyplane.storage.models.prefixes import IPV6_KIND, ServiceSubnet, StockPrefix
from proxyplane.storage.repos import prefixes as prefix_rows

MAX_PREFIX_LEN = 64  # a prefix smaller than a /64 is no pool for per-service /64s


def parse_prefix(text: str, subnet_len: int) -> ipaddress.IPv6Network:
    """A routed IPv6 prefix, normalised (host bits must be zero), split into `subnet_len` subnets."""
    try:
        net = ipaddress.IPv6Network(text.strip(), strict=True)
    except ValueError as exc:
        raise ValueError(f"not an IPv6 prefix (CIDR with zero host bits): {text!r}: {exc}") from None
    if net.prefixlen > MAX_PREFIX_LEN:
        raise ValueError(f"a prefix must be a /{MAX_PREFIX_LEN} or larger, got /{net.prefixlen}")
    if not net.prefixlen < subnet_len <= 128:
        raise ValueError(f"subnet length must be longer than the prefix (/{net.prefixlen}) and at most 128")
    return net


def subnet_count(prefix: str, subnet_len: int) -> int:
    return 1 << (subnet_len - ipaddress.IPv6Network(prefix).prefixlen)


def subnet_at(prefix: str, subnet_len: int, index: int) -> str:
    """The `index`-th subnet of `prefix` (normalised CIDR)."""
    net = ipaddress.IPv6Network(prefix)
    base = int(net.network_address) + (index << (128 - subnet_len))
    return str(ipaddress.IPv6Network((base, subnet_len)))


@dataclass(frozen=True)
class PrefixRow:
    prefix: str
    subnet_len: int
    country_maxmind: str
    country_ripe: str
    subnets: int
    used: int
    free: int
    retired: bool


async def add_prefix(
    session: AsyncSession, prefix: str, country_maxmind: str, country_ripe: str, subnet_len: int = 64
) -> tuple[StockPrefix, bool]:
    """Add a routed prefix to the IPv6 pool; (row, added). An existing prefix is left as it is (added
    False) unless it was retired with nothing handed out, in which case it is re-added with these values.
    A prefix overlapping another one on sale is refused."""
    net = parse_prefix(prefix, subnet_len)
    mm, ripe = normalize_country(country_maxmind), normalize_country(country_ripe)
    rows = (await session.execute(select(StockPrefix))).scalars().all()
    for row in rows:
        other = ipaddress.IPv6Network(row.prefix)
        if other == net:
            if row.retired_at is not None and row.next_index == 0:
                await prefix_rows.reopen_prefix(session, row, subnet_len, mm, ripe)
                return row, True
            return row, False
        if row.retired_at is None and other.overlaps(net):
            raise ValueError(f"{net} overlaps {other}, already in stock")
    return await prefix_rows.add_prefix(session, str(net), subnet_len, mm, ripe), True


async def retire_prefix(session: AsyncSession, prefix: str) -> bool:
    """Stop selling a prefix (services holding subnets of it keep them). Idempotent."""
    net = str(ipaddress.IPv6Network(prefix.strip(), strict=False))
    return await prefix_rows.retire_prefix(session, net, utcnow())


def _reusable() -> Select[int, str]:
    """Released subnets no live service holds (DISTINCT subnet, prefix_id)."""
    live = aliased(ServiceSubnet)
    return (
        select(ServiceSubnet.prefix_id, ServiceSubnet.subnet)
        .where(
            ServiceSubnet.released_at.is_not(None),
            ~select(live.id).where(live.subnet == ServiceSubnet.subnet, live.released_at.is_(None)).exists(),
        )
        .distinct()
    )


async def list_prefixes(session: AsyncSession) -> list[PrefixRow]:
    """Every prefix with its subnets, used (live) and free (never handed out + released and free)."""
    prefixes = (await session.execute(select(StockPrefix).order_by(StockPrefix.id))).scalars().all()
    live = dict(
        (
            await session.execute(
                select(ServiceSubnet.prefix_id, func.count())
                .where(ServiceSubnet.released_at.is_(None))
                .group_by(ServiceSubnet.prefix_id)
            )
        ).all()
    )
    out = []
    for p in prefixes:
        total = subnet_count(p.prefix, p.subnet_len)
        free = total - int(live.get(p.id, 0))  # never handed out, released, or left by a deleted service
        out.append(
            PrefixRow(
                p.prefix,
                p.subnet_len,
                p.country_maxmind,
                p.country_ripe,
                total,
                int(live.get(p.id, 0)),
                free,
                p.retired_at is not None,
            )
        )
    return out


async def _live_counts(session: AsyncSession, prefix_ids: Sequence[int]) -> dict[int, int]:
    """{prefix id: live subnets} (one live row per subnet: the partial unique index)."""
    rows = await session.execute(
        select(ServiceSubnet.prefix_id, func.count())
        .where(ServiceSubnet.prefix_id.in_(prefix_ids), ServiceSubnet.released_at.is_(None))
        .group_by(ServiceSubnet.prefix_id)
    )
    return {int(pid): int(n) for pid, n in rows.all()}


async def _holes(
    session: AsyncSession,
    pid: int,
    prefix: str,
    subnet_len: int,
    next_index: int,
    skip: Collection[str],
    k: int,
) -> list[str]:
    """Up to `k` subnets below the cursor without any row: their service row was deleted outright (the
    ON DELETE CASCADE took its history). Looked for only when released subnets and the cursor fall short,
    O(subnets handed out of this prefix)."""
    seen = set(
        (await session.execute(select(ServiceSubnet.subnet).where(ServiceSubnet.prefix_id == pid))).scalars()
    )
    out: list[str] = []
    for i in range(next_index):
        if len(out) >= k:
            break
        subnet = subnet_at(prefix, subnet_len, i)
        if subnet not in seen and subnet not in skip:
            out.append(subnet)
    return out


def _country_col(geo_source: str):  # type: ignore[no-untyped-def]
    return StockPrefix.country_ripe if geo_source == "ripe" else StockPrefix.country_maxmind


async def availability(
    session: AsyncSession,
    geo_source: str,
    countries: Collection[str] | Mapping[str, int] | None = None,
    prefix_ids: Collection[int] | None = None,
) -> dict[str, int]:
    """{country: free subnets} of the prefixes on sale (never-handed-out + released and free); only of
    `prefix_ids` when given (a place's prefixes, issue 36)."""
    col = _country_col(geo_source)
    q = select(StockPrefix.id, StockPrefix.prefix, StockPrefix.subnet_len, StockPrefix.next_index, col).where(
        StockPrefix.product_kind == IPV6_KIND, StockPrefix.retired_at.is_(None)
    )
    if countries is not None:
        q = q.where(col.in_(sorted(set(countries))))
    if prefix_ids is not None:
        q = q.where(StockPrefix.id.in_(sorted(prefix_ids)))
    prefixes = (await session.execute(q)).all()
    if not prefixes:
        return {}
    live = await _live_counts(session, [p[0] for p in prefixes])
    out: dict[str, int] = {}
    for pid, prefix, subnet_len, _, country in prefixes:
        free = subnet_count(prefix, subnet_len) - live.get(pid, 0)
        if free > 0:
            out[country] = out.get(country, 0) + free
    return out


async def take(
    session: AsyncSession,
    service_id: uuid.UUID,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    exclude: Collection[str] = (),
    now: datetime | None = None,
    prefix_ids: Collection[int] | None = None,
) -> list[Allocated]:
    """Take `count` subnets per (country, count) for the service (never one of `exclude`: subnets it
    holds or held), released ones first, then from the cursor; only from `prefix_ids` when given (a
    place's prefixes, issue 36). May return fewer (the caller decides).
    Returned as Allocated(ip_id = the prefix id, address = the subnet CIDR, port None, country)."""
    wanted = {c: n for c, n in segments if n > 0}
    if not wanted:
        return []
    await session.flush()  # the service row the subnets point at
    col = _country_col(geo_source)
    q = (
        select(StockPrefix.id, StockPrefix.prefix, StockPrefix.subnet_len, StockPrefix.next_index, col)
        .where(
            StockPrefix.product_kind == IPV6_KIND,
            StockPrefix.retired_at.is_(None),
            col.in_(sorted(wanted)),
            StockPrefix.id.in_(sorted(prefix_ids)) if prefix_ids is not None else true(),
        )
        .order_by(StockPrefix.id)
        .with_for_update()  # PostgreSQL; SQLite compiles no FOR UPDATE (one writer: BEGIN IMMEDIATE)
    )
    prefixes = (await session.execute(q)).all()
    now = now or utcnow()
    rows: list[dict[str, object]] = []
    ids = [p[0] for p in prefixes]
    country_of = {p[0]: p[4] for p in prefixes}
    if ids:  # released subnets first (the prefixes are locked: nobody else reuses them meanwhile)
        reuse = _reusable().where(ServiceSubnet.prefix_id.in_(ids)).order_by(ServiceSubnet.subnet)
        for pid, subnet in (await session.execute(reuse)).all():
            country = country_of[pid]
            if wanted.get(country, 0) > 0 and subnet not in exclude:
                rows.append({"prefix_id": pid, "subnet": subnet, "country": country})
                wanted[country] -= 1
    for pid, prefix, subnet_len, next_index, country in prefixes:
        need = wanted.get(country, 0)
        room = subnet_count(prefix, subnet_len) - int(next_index)
        k = min(need, room)
        if k <= 0:
            continue
        if not await prefix_rows.advance_cursor(session, pid, int(next_index), k):
            continue  # SQLite cannot lock ahead; another writer moved it (never under BEGIN IMMEDIATE)
        for i in range(int(next_index), int(next_index) + k):
            rows.append({"prefix_id": pid, "subnet": subnet_at(prefix, subnet_len, i), "country": country})
        wanted[country] = need - k
    for pid, prefix, subnet_len, next_index, country in prefixes:  # subnets of deleted services
        need = wanted.get(country, 0)
        if need <= 0 or not next_index:
            continue
        for subnet in await _holes(session, pid, prefix, subnet_len, int(next_index), exclude, need):
            rows.append({"prefix_id": pid, "subnet": subnet, "country": country})
            wanted[country] -= 1
    await prefix_rows.add_subnets(session, service_id, now, rows)
    return [Allocated(int(str(r["prefix_id"])), str(r["subnet"]), None, str(r["country"])) for r in rows]


async def release(
    session: AsyncSession, service_id: uuid.UUID, subnets: Collection[str] | None = None
) -> int:
    """Release the live subnets of a service (all, or only `subnets`); idempotent. How many."""
    return await prefix_rows.release_subnets(session, service_id, subnets, utcnow())


async def live_subnets(session: AsyncSession, service_id: uuid.UUID) -> list[ServiceSubnet]:
    rows = await session.execute(
        select(ServiceSubnet)
        .where(ServiceSubnet.service_id == service_id, ServiceSubnet.released_at.is_(None))
        .order_by(ServiceSubnet.id)
    )
    return list(rows.scalars())


async def held_subnets(session: AsyncSession, service_id: uuid.UUID) -> set[str]:
    rows = await session.execute(select(ServiceSubnet.subnet).where(ServiceSubnet.service_id == service_id))
    return set(rows.scalars())


def random_address(subnet: str, rng: random.Random) -> str:
    """A random address of the subnet, never the subnet-router anycast address (host bits zero) unless the
    subnet is a single address."""
    net = ipaddress.IPv6Network(subnet)
    return str(net[rng.randrange(1, net.num_addresses)] if net.num_addresses > 1 else net[0])


def check_in_subnets(address: str, subnets: Sequence[str]) -> str:
    """A pinned IPv6 address, normalised, that lies inside one of the service's subnets."""
    try:
        ip = ipaddress.IPv6Address(address.strip())
    except ValueError:
        raise ValidationFailed(f"not an IPv6 address: {address!r}", field="pin") from None
    if not any(ip in ipaddress.IPv6Network(s) for s in subnets):
        raise ValidationFailed(
            f"{ip} is not inside the service's subnet(s) {', '.join(subnets)}", field="pin"
        )
    return str(ip)
