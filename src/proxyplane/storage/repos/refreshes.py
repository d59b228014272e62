"""The writer of `service_refreshes` (issue 31): a refresh's record, written before its IPs are replaced
so the free window's unique key decides between concurrent refreshes (domains/ips/service.refresh). Its
replaced list and invoice, set on the loaded row once known, are the unit of work's. Nothing here commits."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.billing import ServiceRefresh


async def add_refresh(
    session: AsyncSession,
    service_id: uuid.UUID,
    free: bool,
    free_window: int | None,
    charged_cents: int,
    now: datetime,
) -> ServiceRefresh:
    """The refresh's row (free: in `free_window`), flushed: IntegrityError when another refresh used the
    window's free one."""
    record = ServiceRefresh(
        service_id=service_id,
        kind="free" if free else "paid",
        free_window=free_window,
        replaced=[],
        charged_cents=charged_cents,
        created_at=now,
    )
    session.add(record)
    await session.flush()
    return record
