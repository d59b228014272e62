"""The one writer of `upstreams` and `upstream_usage` (issue 36.4), plus the reads the margin report and
the gateway's upstream directory make.

`add_usage` is an upsert per (upstream, hour) (several gateway nodes add to one hour's row), in the
dialect's ON CONFLICT form."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Text, cast, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import LedgerEntry, Service
from proxyplane.storage.models.upstreams import Upstream, UpstreamUsage

IN_CHUNK = 500
UsageDelta = tuple[uuid.UUID, datetime, int, int, int, int]  # (upstream, hour, up, down, tunnels, failures)


async def next_position(session: AsyncSession, pool: str) -> int:
    top = await session.scalar(select(func.max(Upstream.position)).where(Upstream.pool == pool))
    return 1 if top is None else int(top) + 1


async def add(session: AsyncSession, **fields: Any) -> Upstream:
    row = Upstream(**fields)
    session.add(row)
    await session.flush()
    return row


async def get(session: AsyncSession, upstream_id: uuid.UUID) -> Upstream | None:
    return await session.get(Upstream, upstream_id)


async def position_taken(session: AsyncSession, pool: str, position: int, but: uuid.UUID | None) -> bool:
    query = select(Upstream.upstream_id).where(Upstream.pool == pool, Upstream.position == position)
    found = await session.scalar(query)
    return found is not None and found != but


async def change(session: AsyncSession, upstream_id: uuid.UUID, **values: Any) -> None:
    await session.execute(update(Upstream).where(Upstream.upstream_id == upstream_id).values(**values))


async def listing(session: AsyncSession, pool: str | None = None) -> list[Upstream]:
    query = select(Upstream).order_by(Upstream.pool, Upstream.position)
    if pool is not None:
        query = query.where(Upstream.pool == pool)
    return list((await session.execute(query)).scalars())


async def active_rows(session: AsyncSession) -> list[Any]:
    """What a gateway node serves: the active upstreams in failover order (passwords still sealed)."""
    c = Upstream
    query = (
        select(c.upstream_id, c.pool, c.position, c.scheme, c.host, c.port, c.username, c.password_enc,
               c.template, c.health)
        .where(c.active.is_(True))
        .order_by(c.pool, c.position)
    )
    return list((await session.execute(query)).all())


async def add_usage(session: AsyncSession, deltas: Sequence[UsageDelta]) -> None:
    """Add the deltas to their (upstream, hour) rows; those of an upstream no longer in the store (a
    deleted row: its usage cascaded away with it) are dropped, so a spooled batch is never stuck on them."""
    ids = {d[0] for d in deltas}
    if ids:
        known = set((await session.execute(select(Upstream.upstream_id).where(Upstream.upstream_id.in_(ids))))
                    .scalars())
        deltas = [d for d in deltas if d[0] in known]
    if not deltas:
        return
    conn = await session.connection()
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    rows = [
        {"upstream_id": u, "hour": h, "bytes_up": up, "bytes_down": down, "tunnels": t, "failures": f}
        for u, h, up, down, t, f in deltas
    ]
    stmt = insert(UpstreamUsage).values(rows)
    ex = stmt.excluded
    c = UpstreamUsage.__table__.c
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=["upstream_id", "hour"],
            set_={
                "bytes_up": c.bytes_up + ex.bytes_up,
                "bytes_down": c.bytes_down + ex.bytes_down,
                "tunnels": c.tunnels + ex.tunnels,
                "failures": c.failures + ex.failures,
            },
        )
    )


async def usage_since(session: AsyncSession, since: datetime) -> dict[uuid.UUID, tuple[int, int, int]]:
    """{upstream: (bytes both ways, tunnels, failures)} from ``since`` (an hour boundary) on."""
    query = (
        select(
            UpstreamUsage.upstream_id,
            func.sum(UpstreamUsage.bytes_up + UpstreamUsage.bytes_down),
            func.sum(UpstreamUsage.tunnels),
            func.sum(UpstreamUsage.failures),
        )
        .where(UpstreamUsage.hour >= since)
        .group_by(UpstreamUsage.upstream_id)
    )
    return {u: (int(b or 0), int(t or 0), int(f or 0)) for u, b, t, f in (await session.execute(query)).all()}


async def pool_services(session: AsyncSession) -> dict[uuid.UUID, str]:
    """{service_id: upstream pool} of the rotating services bought from a product drawing from a pool."""
    query = select(Service.service_id, cast(Service.parameters, Text)).where(
        Service.product_kind == "proxy_rotating", cast(Service.parameters, Text).like('%"upstream_pool"%')
    )

    out: dict[uuid.UUID, str] = {}
    for service_id, raw in (await session.execute(query)).all():
        pool = (json.loads(raw) if isinstance(raw, str) else dict(raw or {})).get("upstream_pool")
        if pool:
            out[service_id] = str(pool)
    return out


async def sales_by_service(
    session: AsyncSession, service_ids: Iterable[uuid.UUID], since: datetime, not_sales: Sequence[str]
) -> dict[uuid.UUID, int]:
    """Net sales (debits minus refunds, cents) per service from ``since``: the ledger's entries of those
    services that are not deposits or operator adjustments, sign flipped (as the operator overview)."""
    ids = list(service_ids)
    out: dict[uuid.UUID, int] = {}
    for i in range(0, len(ids), IN_CHUNK):
        query = (
            select(LedgerEntry.service_id, func.sum(LedgerEntry.amount_cents))
            .where(
                LedgerEntry.service_id.in_(ids[i : i + IN_CHUNK]),
                LedgerEntry.created_at >= since,
                LedgerEntry.kind.not_in(not_sales),
            )
            .group_by(LedgerEntry.service_id)
        )
        for service_id, cents in (await session.execute(query)).all():
            if service_id is not None:
                out[service_id] = -int(cents or 0)
    return out
