"""Purge of spent OAuth state (issue 21.2): authorization requests past their expiry (unanswered, denied,
or whose single-use code was exchanged or expired: a request lives CONSENT_SECONDS, its code
CODE_SECONDS) and tokens that can no longer be used: expired ones, revoked access tokens, and revoked
refresh tokens of ended grants. A rotated (revoked) refresh token of a live grant is kept until it
expires: presenting it again ends the grant (reuse detection). Grants themselves stay (the dashboard and
the key row's usage refer to them). Run by the renewal job's pass after the idempotency prune, in batches
of bounded size, each in its own transaction; a large backlog is worked off over several passes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import oauth as oauth_rows

Prune = Callable[[AsyncSession, datetime, int], Awaitable[int]]

BATCH = 1000
MAX_BATCHES = 20  # per table and pass


async def prune_oauth(db: Database, now: datetime | None = None, batch: int = BATCH) -> int:
    """Delete the requests and tokens no one can use any more; the number of rows deleted."""
    now = now or utcnow()
    return await _in_batches(db, oauth_rows.prune_requests, now, batch) + await _in_batches(
        db, oauth_rows.prune_tokens, now, batch
    )


async def _in_batches(db: Database, prune: Prune, now: datetime, batch: int) -> int:
    deleted = 0
    for _ in range(MAX_BATCHES):
        async with db.unit_of_work() as uow:
            n = await prune(uow.session, now, batch)
            if not n:
                break
            await uow.commit()
        deleted += n
        if n < batch:
            break
    return deleted
