"""The writer of `service_addons`. Nothing here commits; the refunded amount of a loaded add-on is the unit
of work's (domains/addons/service.py)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.billing import ServiceAddon
from proxyplane.storage.rowcount import rowcount


async def add_addon(session: AsyncSession, addon: ServiceAddon) -> None:
    """A bought add-on, flushed; raises IntegrityError when the service already has an active one of its
    kind (a concurrent purchase won: the unit of work is spent)."""
    session.add(addon)
    await session.flush()


async def cancel(session: AsyncSession, addon_id: uuid.UUID, now: datetime) -> bool:
    """The add-on from active to canceled, guarded: False when it was not active any more. The loaded
    object is not updated (refresh it)."""
    moved = await session.execute(
        update(ServiceAddon)
        .where(ServiceAddon.addon_id == addon_id, ServiceAddon.status == "active")
        .values(status="canceled", canceled_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1
