"""Set-based allocation of exit IPs: one statement takes every IP of an order, whatever its size (the
statements: storage/repos/stock.py, the one writer of the slot counters and of service_ips).

`take()` takes, per (country, count), the least-shared IPs that still have a free slot; on PostgreSQL the
picks lock with `FOR UPDATE SKIP LOCKED`, so concurrent orders never wait on each other's stock rows.
Nothing is ever oversold (the slot condition on the locked row, backed by a CHECK constraint).

SKIP LOCKED may come back short while other orders hold rows that still have room (shared IPs near the
end of the stock). `take(wait=True)` is the slow path for that case: it waits for such rows, locking
them in id order (no two waiting orders can lock in a cycle); it must run without holding skipped-locked
rows, so callers roll back to a savepoint first (see `allocate` and orders.place_order).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.repos import stock as repo
from proxyplane.storage.repos.stock import Allocated as Allocated
from proxyplane.storage.repos.stock import PlaceFilter
from proxyplane.storage.repos.stock import country_column as country_column
from proxyplane.storage.repos.stock import skips_held_rows as skips_held_rows

SAVEPOINT = "stock_take"


async def take(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    exclude: set[int] | frozenset[int] = frozenset(),
    wait: bool = False,
    now: datetime | None = None,
) -> list[Allocated]:
    """Take up to `count` IPs per (country, count) for the service, never one of `exclude`, and record
    them in service_ips. May return fewer than asked (not enough free slots, or rows skipped because
    another order holds them); the caller decides. Returned in ip id order (the service_ips order)."""
    wanted = [(c, n) for c, n in segments if n > 0]
    if not wanted:
        return []
    if product_kind == IPV6_KIND:  # subnets of routed prefixes (issue 16), not rows of stock_ips
        from proxyplane.domains.stock import subnets

        return await subnets.take(session, service_id, geo_source, wanted, now=now)
    return await repo.take_ips(
        session, service_id, product_kind, geo_source, wanted, exclude, wait, now or utcnow()
    )


def shortfall(segments: Sequence[tuple[str, int]], got: Sequence[Allocated]) -> list[tuple[str, int]]:
    """(country, still missing) for every segment not fully served by `got`."""
    have: dict[str, int] = {}
    for a in got:
        have[a.country] = have.get(a.country, 0) + 1
    missing = []
    for country, count in segments:
        served = min(count, have.get(country, 0))
        have[country] = have.get(country, 0) - served
        if served < count:
            missing.append((country, count - served))
    return missing


async def take_waiting(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    *,
    exclude: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[Allocated], list[tuple[str, int]]]:
    """The slow path: take what is missing, waiting for rows other orders hold (PostgreSQL), until every
    segment is served or no candidate is left. Returns (taken, still missing)."""
    taken: list[Allocated] = []
    seen = set(exclude)
    missing = [(c, n) for c, n in segments if n > 0]
    while missing:
        got = await take(session, service_id, product_kind, geo_source, missing, exclude=seen, wait=True)
        if not got:
            break
        taken += got
        seen.update(a.ip_id for a in got)
        missing = shortfall(missing, got)
    return taken, missing


Want = tuple[str, int, PlaceFilter | None]  # (country, count, place): a segment, placed or not (issue 36)


async def take_wants(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    wants: Sequence[Want],
    *,
    exclude: set[int] | frozenset[int] = frozenset(),
    wait: bool = False,
) -> tuple[list[Allocated], list[Want]]:
    """`take` for segments that may name a place: the placed ones first, cities before regions (a take
    for the whole country must not use the IPs a city needs), one statement each; then the others in one
    statement, as `take`. Returns (taken in ip id order, what is still missing)."""
    taken: list[Allocated] = []
    seen = set(exclude)
    missing: list[Want] = []
    placed = [w for w in wants if w[2] is not None and w[1] > 0]
    placed.sort(key=lambda w: w[2] is None or w[2].cities is None)
    for country, count, place in placed:
        if product_kind == IPV6_KIND:  # the subnets of the place's prefixes
            from proxyplane.domains.stock import subnets

            assert place is not None
            got = await subnets.take(session, service_id, geo_source, [(country, count)],
                                     prefix_ids=place.prefix_ids or ())
        else:
            got = await repo.take_ips(
                session, service_id, product_kind, geo_source, [(country, count)], seen, wait, utcnow(), place
            )
        taken += got
        seen.update(a.ip_id for a in got)
        if len(got) < count:
            missing.append((country, count - len(got), place))
    plain = [(c, n) for c, n, p in wants if p is None and n > 0]
    if plain:
        got = await take(session, service_id, product_kind, geo_source, plain, exclude=seen, wait=wait)
        taken += got
        missing += [(c, n, None) for c, n in shortfall(plain, got)]
    return sorted(taken, key=lambda a: a.ip_id), missing


async def take_wants_waiting(
    session: AsyncSession,
    service_id: uuid.UUID,
    product_kind: str,
    geo_source: str,
    wants: Sequence[Want],
    *,
    exclude: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[Allocated], list[Want]]:
    """`take_waiting` for segments that may name a place."""
    taken: list[Allocated] = []
    seen = set(exclude)
    missing = [w for w in wants if w[1] > 0]
    while missing:
        got, missing = await take_wants(
            session, service_id, product_kind, geo_source, missing, exclude=seen, wait=True
        )
        if not got:
            break
        taken += got
        seen.update(a.ip_id for a in got)
    return sorted(taken, key=lambda a: a.ip_id), missing
