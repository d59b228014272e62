"""Retention of idempotency records (the first results of charging calls, replayed to retries, and the
dashboard's form tokens, web/forms.py): records older than PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS
(default 30) are deleted by the renewal job's pass, in batches of bounded size, each in its own
transaction, oldest first through the created_at index (migration 0015d). A replay within the window
always returns the first result; after it, the same key is a new request."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import idempotency as records

DEFAULT_RETENTION_DAYS = 30.0
BATCH = 1000
MAX_BATCHES = 20  # per pass: a large backlog is worked off over several passes


def retention() -> timedelta:
    """PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS (default 30; at least one day)."""
    days = float(os.environ.get("PROXYPLANE_IDEMPOTENCY_RETENTION_DAYS", DEFAULT_RETENTION_DAYS))
    return timedelta(days=max(days, 1.0))


async def prune_idempotency(
    db: Database, now: datetime | None = None, keep: timedelta | None = None, batch: int = BATCH
) -> int:
    """Delete the records created before now - keep; the number deleted."""
    cutoff = (now or utcnow()) - (keep if keep is not None else retention())
    deleted = 0
    for _ in range(MAX_BATCHES):
        async with db.unit_of_work() as uow:
            n = await records.prune_before(uow.session, cutoff, batch)
            if not n:
                break
            await uow.commit()
        deleted += n
        if n < batch:
            break
    return deleted
