"""The writer of `web_sessions` (the dashboard's signed-in browsers). Nothing here commits."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import WebSession


async def add(session: AsyncSession, row: WebSession) -> None:
    """A new session record, flushed."""
    session.add(row)
    await session.flush()


async def revoke(session: AsyncSession, customer_id: int, only: str | None, now: datetime) -> None:
    """Revoke the customer's live session `only`, or all of them (only None)."""
    stmt = update(WebSession).where(WebSession.customer_id == customer_id, WebSession.revoked_at.is_(None))
    if only is not None:
        stmt = stmt.where(WebSession.id == only)
    await session.execute(stmt.values(revoked_at=now))


async def touch(session: AsyncSession, session_id: str, seen_at: datetime) -> None:
    """The session was seen in use at `seen_at`."""
    await session.execute(update(WebSession).where(WebSession.id == session_id).values(last_seen_at=seen_at))
