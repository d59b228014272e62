"""The writer of `stock_prefixes` (the IPv6 pool's routed prefixes and their subnet cursors) and
`service_subnets` (issue 31: moved from domains/stock/subnets.py, which keeps the order of business: which
subnets, in what order). Nothing here commits."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.prefixes import IPV6_KIND, ServiceSubnet, StockPrefix
from proxyplane.storage.rowcount import rowcount


async def add_prefix(
    session: AsyncSession, prefix: str, subnet_len: int, country_maxmind: str, country_ripe: str
) -> StockPrefix:
    """A new prefix on sale (its cursor at the first subnet), flushed."""
    row = StockPrefix(
        product_kind=IPV6_KIND,
        prefix=prefix,
        subnet_len=subnet_len,
        country_maxmind=country_maxmind,
        country_ripe=country_ripe,
        next_index=0,
    )
    session.add(row)
    await session.flush()
    return row


async def reopen_prefix(
    session: AsyncSession, row: StockPrefix, subnet_len: int, country_maxmind: str, country_ripe: str
) -> None:
    """A retired prefix (loaded, nothing handed out) on sale again with these values, flushed."""
    row.retired_at, row.subnet_len = None, subnet_len
    row.country_maxmind, row.country_ripe = country_maxmind, country_ripe
    await session.flush()


async def retire_prefix(session: AsyncSession, prefix: str, now: datetime) -> bool:
    """Stop selling the prefix (retired at `now`): whether it was on sale."""
    done = await session.execute(
        update(StockPrefix)
        .where(StockPrefix.prefix == prefix, StockPrefix.retired_at.is_(None))
        .values(retired_at=now)
    )
    return bool(rowcount(done))


async def advance_cursor(session: AsyncSession, prefix_id: int, next_index: int, k: int) -> bool:
    """Move the prefix's cursor from `next_index` by `k` subnets, guarded: False when another writer moved
    it first (nothing written)."""
    moved = await session.execute(
        update(StockPrefix)
        .where(StockPrefix.id == prefix_id, StockPrefix.next_index == next_index)
        .values(next_index=StockPrefix.next_index + k)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def add_subnets(
    session: AsyncSession, service_id: uuid.UUID, now: datetime, rows: Sequence[Mapping[str, Any]]
) -> None:
    """The service's new subnets (prefix_id, subnet, country each), allocated at `now`, in one
    executemany."""
    if rows:
        await session.execute(
            insert(ServiceSubnet),
            [{"service_id": service_id, "allocated_at": now, **r} for r in rows],
        )


async def release_subnets(
    session: AsyncSession, service_id: uuid.UUID, subnets: Collection[str] | None, now: datetime
) -> int:
    """Release the live subnets of a service (all, or only `subnets`) at `now`; idempotent. How many."""
    cond = [ServiceSubnet.service_id == service_id, ServiceSubnet.released_at.is_(None)]
    if subnets is not None:
        cond.append(ServiceSubnet.subnet.in_(sorted(subnets)))
    done = await session.execute(
        update(ServiceSubnet)
        .where(and_(*cond))
        .values(released_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(done)
