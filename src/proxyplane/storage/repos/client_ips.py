"""The one writer of `gateway_client_ips` (issue 32.5): each gateway process publishes the client
addresses it saw per limited service and reads the other processes' fresh reports (gateway/node_limits.py,
in its connection-count unit of work)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.client_ips import GatewayClientIps


async def publish(
    session: AsyncSession, reporter_id: str, seen: dict[str, dict[str, float]], now: datetime
) -> None:
    """Write this process's report (one upsert of its row)."""
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert
    stmt = insert(GatewayClientIps).values(reporter_id=reporter_id, seen=seen, updated_at=now)
    stmt = stmt.on_conflict_do_update(
        index_elements=["reporter_id"], set_={"seen": stmt.excluded.seen, "updated_at": now}
    )
    await session.execute(stmt)


async def others(session: AsyncSession, reporter_id: str, fresh: datetime) -> list[dict[str, Any]]:
    """The other processes' reports written after ``fresh``."""
    rows = await session.execute(
        select(GatewayClientIps.seen).where(
            GatewayClientIps.reporter_id != reporter_id, GatewayClientIps.updated_at > fresh
        )
    )
    return [dict(seen or {}) for (seen,) in rows.all()]


async def remove(session: AsyncSession, reporter_id: str) -> None:
    await session.execute(delete(GatewayClientIps).where(GatewayClientIps.reporter_id == reporter_id))


async def prune(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(GatewayClientIps).where(GatewayClientIps.updated_at < before))
