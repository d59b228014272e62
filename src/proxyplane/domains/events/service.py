"""emit(): record an event and queue one outbox delivery per subscribed, enabled webhook endpoint, all in
the caller's transaction. The caller commits (or rolls back) the change and its events together, so a
rolled-back change sends nothing and a committed one cannot lose its event."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.events.catalogue import EVENT_TYPES
from proxyplane.storage.models import Event, NotificationSettings, WebhookDelivery, WebhookEndpoint
from proxyplane.storage.repos import events as event_rows


def subscribed(endpoint: WebhookEndpoint, event_type: str) -> bool:
    """An endpoint gets the types it chose; an empty choice means every type (but never test events)."""
    if event_type == "webhook.test":
        return False
    return not endpoint.event_types or event_type in endpoint.event_types


def _pending_delivery(
    customer_id: int, endpoint: WebhookEndpoint, event: Event, now: datetime
) -> WebhookDelivery:
    """A delivery of ``event`` to ``endpoint``, due now."""
    return WebhookDelivery(
        public_id=uuid.uuid4(),
        customer_id=customer_id,
        endpoint_id=endpoint.id,
        event_id=event.id,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        created_at=now,
    )


async def emit(
    session: AsyncSession,
    customer_id: int,
    event_type: str,
    data: dict[str, Any],
    *,
    only_endpoint: uuid.UUID | None = None,
) -> Event:
    """Write the event and its deliveries (flushes, never commits). `data` must be JSON-serialisable."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    event = Event(id=uuid.uuid4(), customer_id=customer_id, type=event_type, data=data, created_at=utcnow())
    query = select(WebhookEndpoint).where(
        WebhookEndpoint.customer_id == customer_id, WebhookEndpoint.enabled.is_(True)
    )
    if only_endpoint is not None:
        query = query.where(WebhookEndpoint.id == only_endpoint)
    endpoints = (await session.execute(query.order_by(WebhookEndpoint.created_at))).scalars().all()
    now = utcnow()
    deliveries = [
        _pending_delivery(customer_id, endpoint, event, now)
        for endpoint in endpoints
        if only_endpoint is not None or subscribed(endpoint, event_type)
    ]
    await event_rows.add_event(session, event, deliveries)
    return event


async def balance_threshold(session: AsyncSession, customer_id: int) -> int | None:
    row = await session.get(NotificationSettings, customer_id)
    return row.balance_low_threshold_cents if row is not None else None


async def after_debit(
    session: AsyncSession,
    customer_id: int,
    before_cents: int,
    after_cents: int,
    *,
    known_threshold: tuple[int | None] | None = None,
) -> None:
    """Emit wallet.balance_low when a debit crosses the customer's threshold (once per crossing).
    `known_threshold`: (threshold,) when the caller already read it (the order path), else it is read."""
    threshold = known_threshold[0] if known_threshold else await balance_threshold(session, customer_id)
    if threshold is not None and before_cents >= threshold > after_cents:
        await emit(
            session,
            customer_id,
            "wallet.balance_low",
            {"balance_cents": after_cents, "threshold_cents": threshold},
        )


async def emit_many(
    session: AsyncSession,
    customer_id: int,
    items: Sequence[tuple[str, dict[str, Any]]],
    *,
    has_endpoints: bool = True,
) -> list[uuid.UUID]:
    """emit() for several events of one customer at once: one INSERT of the events, one read of the
    endpoints (skipped when the caller knows the customer has no enabled endpoint), one INSERT of the
    deliveries. Core INSERTs (no ORM objects: this is on the order path); returns the event ids."""
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for event_type, data in items:
        if event_type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {event_type!r}")
        # stamped one by one, in emission order, as emit() would
        rows.append(
            {
                "id": uuid.uuid4(),
                "customer_id": customer_id,
                "type": event_type,
                "data": data,
                "created_at": utcnow(),
            }
        )
    if not rows:
        return []
    await event_rows.insert_events(session, rows)
    endpoints: Sequence[WebhookEndpoint] = ()
    if has_endpoints:
        query = select(WebhookEndpoint).where(
            WebhookEndpoint.customer_id == customer_id, WebhookEndpoint.enabled.is_(True)
        )
        endpoints = (await session.execute(query.order_by(WebhookEndpoint.created_at))).scalars().all()
    deliveries = [
        {
            "public_id": uuid.uuid4(),
            "customer_id": customer_id,
            "endpoint_id": endpoint.id,
            "event_id": row["id"],
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        for row in rows
        for endpoint in endpoints
        if subscribed(endpoint, row["type"])
    ]
    await event_rows.insert_deliveries(session, deliveries)
    return [row["id"] for row in rows]
