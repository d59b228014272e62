"""The gateway nodes' writes of `sticky_sessions` (gateway/sticky_sync.py): each node's new or changed
sessions upserted in batches, the rows others wrote since a node's last look, the prune of long-expired
rows. (The API's rotations, ends and purge markers are still written by domains/proxy/service.py.)"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine_choice import dialect_name
from proxyplane.storage.models.gateway import StickySession

BATCH = 400  # rows per upsert statement
_UPDATED = ("exit_ip", "started_at", "expires_at", "ended", "writer", "updated_at")


async def upsert_node_sessions(
    session: AsyncSession, values: Sequence[dict[str, Any]], api_writer: str
) -> None:
    """Write a node's sessions (one upsert per BATCH rows). A row the API (``api_writer``) wrote is
    overwritten only by a session that started after the API's write: an API rotation/end/purge is not
    undone by a session that started before it."""
    insert = sqlite_insert if dialect_name(session) == "sqlite" else pg_insert
    table = StickySession.__table__.c
    for i in range(0, len(values), BATCH):
        stmt = insert(StickySession).values(list(values[i : i + BATCH]))
        stmt = stmt.on_conflict_do_update(
            index_elements=["service_id", "sid"],
            set_={c: stmt.excluded[c] for c in _UPDATED},
            where=or_(table.writer != api_writer, stmt.excluded.started_at > table.updated_at),
        )
        await session.execute(stmt)


async def written_by_others(
    session: AsyncSession, node_id: str, since: datetime | None
) -> list[StickySession]:
    """The rows not written by ``node_id`` (updated after ``since``, when given)."""
    q = select(StickySession).where(StickySession.writer != node_id)
    if since is not None:
        q = q.where(StickySession.updated_at > since)
    return list((await session.execute(q)).scalars())


async def prune_expired(session: AsyncSession, before: datetime) -> None:
    await session.execute(delete(StickySession).where(StickySession.expires_at < before))
