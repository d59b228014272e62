"""The writer of `sticky_sessions`: the gateway nodes' writes (gateway/sticky_sync.py: each node's new or
changed sessions upserted in batches, the rows others wrote since a node's last look, the prune of
long-expired rows) and the API's purge (every live session of a service or of one sub-user ended, and
its purge marker: domains/proxy/service.purge_sessions). A session the API rotates or ends, changed on
the loaded row (domains/proxy/service.py), is the unit of work's. Nothing here commits."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.engine_choice import dialect_name
from proxyplane.storage.models.gateway import PURGE_SID, StickySession

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


async def end_sessions(
    session: AsyncSession, service_id: uuid.UUID, sid_prefix: str | None, writer: str, now: datetime
) -> None:
    """End the service's sessions not ended yet (only those whose sid starts with `sid_prefix`, if given;
    never the purge marker), written by `writer` at `now`."""
    query = update(StickySession).where(
        StickySession.service_id == service_id,
        StickySession.ended.is_(False),
        StickySession.sid != PURGE_SID,
    )
    if sid_prefix is not None:
        query = query.where(StickySession.sid.startswith(sid_prefix))
    await session.execute(query.values(ended=True, writer=writer, updated_at=now))


async def put_purge_marker(
    session: AsyncSession, service_id: uuid.UUID, marker_sid: str, writer: str, now: datetime
) -> None:
    """The purge marker `marker_sid` (ended, valid for an hour from `now`): it ends the sessions a node
    created but has not written yet. Added, or the existing one renewed; flushed."""
    marker = await session.get(StickySession, (service_id, marker_sid))
    if marker is None:
        session.add(
            StickySession(
                service_id=service_id,
                sid=marker_sid,
                exit_ip="",
                started_at=now,
                expires_at=now + timedelta(hours=1),
                ended=True,
                writer=writer,
                updated_at=now,
            )
        )
    else:
        marker.started_at, marker.expires_at = now, now + timedelta(hours=1)
        marker.ended, marker.writer, marker.updated_at = True, writer, now
    await session.flush()
