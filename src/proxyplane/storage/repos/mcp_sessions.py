"""The one writer of `mcp_sessions` and `mcp_relay` (issue 35.3): MCP sessions any API process can serve,
and the messages the processes pass each other. Nothing here commits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.mcp_sessions import McpRelay, McpSession

RELAY_BATCH = 500


async def add_session(session: AsyncSession, row: dict[str, Any]) -> None:
    session.add(McpSession(**row))
    await session.flush()


async def live_session(session: AsyncSession, session_id: str, seen_after: datetime) -> McpSession | None:
    """The session if it was used after `seen_after` (an idle one has ended)."""
    found = await session.execute(
        select(McpSession).where(McpSession.session_id == session_id, McpSession.seen_at > seen_after)
    )
    return found.scalar_one_or_none()


async def touch(session: AsyncSession, session_id: str, now: datetime) -> None:
    await session.execute(update(McpSession).where(McpSession.session_id == session_id).values(seen_at=now))


async def end_session(session: AsyncSession, session_id: str) -> None:
    await session.execute(delete(McpSession).where(McpSession.session_id == session_id))


async def prune_sessions(session: AsyncSession, seen_before: datetime) -> None:
    await session.execute(delete(McpSession).where(McpSession.seen_at < seen_before))


async def relay(session: AsyncSession, kind: str, target: str, origin: str, body: Any, now: datetime) -> None:
    session.add(McpRelay(kind=kind, target=target, origin=origin, body=body, created_at=now))
    await session.flush()


async def relayed_after(session: AsyncSession, after_id: int) -> list[McpRelay]:
    """Messages with an id above `after_id`, oldest first (at most RELAY_BATCH)."""
    found = await session.execute(
        select(McpRelay).where(McpRelay.id > after_id).order_by(McpRelay.id).limit(RELAY_BATCH)
    )
    return list(found.scalars())


async def relayed_among(session: AsyncSession, ids: list[int]) -> list[McpRelay]:
    """The messages of these ids that exist now (ids a poll found missing: committed late or never)."""
    if not ids:
        return []
    found = await session.execute(select(McpRelay).where(McpRelay.id.in_(ids)).order_by(McpRelay.id))
    return list(found.scalars())


async def last_relay_id(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.coalesce(func.max(McpRelay.id), 0))) or 0)


async def prune_relay(session: AsyncSession, created_before: datetime) -> None:
    await session.execute(delete(McpRelay).where(McpRelay.created_at < created_before))
