"""The writer of `webhook_endpoints` (their queued deliveries: events.py; the delivery worker's claims and
results: webhook_deliveries.py). Nothing here commits; a loaded endpoint's settings are the unit of work's."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import WebhookEndpoint


async def add_endpoint(session: AsyncSession, endpoint: WebhookEndpoint) -> None:
    """A new endpoint, flushed (its defaults are known)."""
    session.add(endpoint)
    await session.flush()


async def delete_endpoint(session: AsyncSession, endpoint: WebhookEndpoint) -> None:
    """The endpoint and (by its foreign keys' cascade) its deliveries, flushed."""
    await session.delete(endpoint)
    await session.flush()
