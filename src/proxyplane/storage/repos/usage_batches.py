"""The one writer of `usage_batches` (issue 35): claim a gateway's spooled batch ids before their rows are
added, so each batch is applied once; prune claims past the retention."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.usage_batches import UsageBatch

# a spooled batch is replayed within this window or never (a node's spool outlives no longer outage)
RETENTION = timedelta(days=30)


def _insert(session: AsyncSession) -> Any:
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


async def claim(session: AsyncSession, batch_ids: Sequence[str], now: datetime) -> set[str]:
    """Insert the ids not applied yet, in the caller's transaction; returns those (the others were
    applied by an earlier transaction and must be skipped). A concurrent claim of the same id waits for
    the first transaction and then finds it taken."""
    if not batch_ids:
        return set()
    stmt = (
        _insert(session)(UsageBatch)
        .values([{"batch_id": b, "applied_at": now} for b in batch_ids])
        .on_conflict_do_nothing(index_elements=["batch_id"])
        .returning(UsageBatch.batch_id)
    )
    return {str(b) for b in (await session.execute(stmt)).scalars()}


async def prune(session: AsyncSession, now: datetime) -> None:
    """Forget claims older than RETENTION."""
    await session.execute(delete(UsageBatch).where(UsageBatch.applied_at < now - RETENTION))
