"""The one writer of `auth_throttles` (issue 30): the shared throttle's buckets, read locked and written in
the caller's transaction (domains/accounts/throttle.py says how it is used). Nothing here commits.

`lock` makes sure a row exists for each key (insert-or-nothing) and reads them FOR UPDATE in key order, so
two API processes checking the same key serialise on it (PostgreSQL row locks; SQLite's writing units of
work are BEGIN IMMEDIATE, one writer at a time) and a burst of parallel guesses cannot all pass one check.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.throttles import AuthThrottle

PURGE_BATCH = 500


def _insert(session: AsyncSession) -> Any:
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


async def lock(
    session: AsyncSession, keys: Iterable[str], now: datetime
) -> dict[str, tuple[float, datetime]]:
    """key -> (stored level, when it was stored) for every key, the rows locked until the transaction ends
    (a key seen for the first time gets an empty row)."""
    ordered = sorted(set(keys))
    if not ordered:
        return {}
    rows = [{"key": k, "level": 0.0, "updated_at": now, "expires_at": now} for k in ordered]
    await session.execute(_insert(session)(AuthThrottle).values(rows).on_conflict_do_nothing())
    found = await session.execute(
        select(AuthThrottle.key, AuthThrottle.level, AuthThrottle.updated_at)
        .where(AuthThrottle.key.in_(ordered))
        .order_by(AuthThrottle.key)
        .with_for_update()
    )
    return {r.key: (float(r.level), r.updated_at) for r in found}


async def store(session: AsyncSession, key: str, level: float, now: datetime, empty_at: datetime) -> None:
    """Write one bucket's new level (the row exists: `lock` made it)."""
    await session.execute(
        update(AuthThrottle)
        .where(AuthThrottle.key == key)
        .values(level=level, updated_at=now, expires_at=empty_at)
    )


async def read(session: AsyncSession, keys: Iterable[str]) -> dict[str, tuple[float, datetime]]:
    """The same as `lock` without locking or creating rows (status pages, tests)."""
    found = await session.execute(
        select(AuthThrottle.key, AuthThrottle.level, AuthThrottle.updated_at).where(
            AuthThrottle.key.in_(sorted(set(keys)))
        )
    )
    return {r.key: (float(r.level), r.updated_at) for r in found}


async def purge(session: AsyncSession, now: datetime, grace: timedelta = timedelta(minutes=5)) -> int:
    """Delete up to PURGE_BATCH rows whose buckets emptied more than `grace` ago; how many went."""
    cutoff = now - grace
    old = (
        select(AuthThrottle.key)
        .where(AuthThrottle.expires_at < cutoff)
        .order_by(AuthThrottle.expires_at)
        .limit(PURGE_BATCH)
    )
    keys = list((await session.execute(old)).scalars())
    if not keys:
        return 0
    # the condition again: a row touched meanwhile (its lock waited for) stays
    await session.execute(
        delete(AuthThrottle).where(AuthThrottle.key.in_(keys), AuthThrottle.expires_at < cutoff)
    )
    return len(keys)
