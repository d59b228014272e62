"""The writer of `proxy_settings` (issue 31): a rotating service's session-mode row, made on first use
(domains/proxy/service.settings_row). Its mode, pin and TTL, set on the loaded row, are the unit of
work's. Nothing here commits."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.gateway import ProxySettings


async def add_settings(session: AsyncSession, service_id: uuid.UUID) -> ProxySettings:
    """The service's settings at their defaults (rotating, no pin, 10 min sticky TTL), flushed."""
    row = ProxySettings(
        service_id=service_id,
        session_mode="rotating",
        pin=None,
        sticky_ttl_seconds=600,
        rotation_key_hash=None,
    )
    session.add(row)
    await session.flush()
    return row
