"""The writer of `legacy_list_updates` (the legacy API's `update_list` throttle clock, one row per service;
what the slot means: domains/legacy/service.claim_list_update). Nothing here commits."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import LegacyListUpdate
from proxyplane.storage.rowcount import rowcount


async def move_if_due(session: AsyncSession, service_id: uuid.UUID, due: datetime, now: datetime) -> bool:
    """Set the service's clock to `now` where it was last set at `due` or before (one conditional
    UPDATE); whether it moved."""
    moved = await session.execute(
        update(LegacyListUpdate)
        .where(LegacyListUpdate.service_id == service_id, LegacyListUpdate.updated_at <= due)
        .values(updated_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def add_first(session: AsyncSession, service_id: uuid.UUID, now: datetime) -> bool:
    """The service's first clock row, set to `now`, in a savepoint; False when a concurrent call inserted
    it first (the unit of work stays usable)."""
    try:
        async with session.begin_nested():
            session.add(LegacyListUpdate(service_id=service_id, updated_at=now))
            await session.flush()
    except IntegrityError:
        return False
    return True
