"""Webhook endpoints (secret shown once, stored encrypted to sign with), deliveries, tests, redelivery."""

from __future__ import annotations

import base64
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.security import SecretBox
from proxyplane.domains.events.catalogue import EVENT_TYPES
from proxyplane.domains.events.service import emit
from proxyplane.domains.webhooks import targets
from proxyplane.storage.models import Event, WebhookDelivery, WebhookEndpoint
from proxyplane.storage.repos import events as event_rows
from proxyplane.storage.repos import webhooks as endpoint_rows

MAX_ENDPOINTS = 20
PREVIOUS_SECRET_GRACE = timedelta(hours=24)


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def webhook_id(event_id: uuid.UUID) -> str:
    """The `webhook-id` header and payload `id`: stable across retries and redeliveries of one event."""
    return f"evt_{event_id.hex}"


def payload(event: Event) -> dict[str, Any]:
    return {
        "id": webhook_id(event.id),
        "type": event.type,
        "timestamp": as_utc(event.created_at).isoformat().replace("+00:00", "Z"),
        "data": event.data,
    }


def check_event_types(types: list[str]) -> list[str]:
    unknown = sorted(set(types) - set(EVENT_TYPES))
    if unknown:
        raise ValidationFailed(
            f"unknown event type(s): {', '.join(unknown)}; see GET /customer/webhooks/events",
            field="event_types",
        )
    return sorted(set(types))


async def check_url(url: str, allow_loopback: bool) -> str:
    try:
        await targets.resolve(url, allow_loopback)
    except targets.TargetRefused as exc:
        raise ValidationFailed(str(exc), field="url") from None
    return url.strip()


async def create_endpoint(
    session: AsyncSession,
    box: SecretBox,
    customer_id: int,
    url: str,
    description: str,
    event_types: list[str],
    allow_loopback: bool,
) -> tuple[WebhookEndpoint, str]:
    count = await session.scalar(select(func.count()).where(WebhookEndpoint.customer_id == customer_id))
    if int(count or 0) >= MAX_ENDPOINTS:
        raise ValidationFailed(f"at most {MAX_ENDPOINTS} webhook endpoints per account")
    secret = new_secret()
    endpoint = WebhookEndpoint(
        id=uuid.uuid4(),
        customer_id=customer_id,
        url=await check_url(url, allow_loopback),
        description=description.strip(),
        event_types=check_event_types(event_types),
        secret_encrypted=box.encrypt(secret),
        enabled=True,
        consecutive_failures=0,
    )
    await endpoint_rows.add_endpoint(session, endpoint)
    return endpoint, secret


async def list_endpoints(session: AsyncSession, customer_id: int) -> list[WebhookEndpoint]:
    rows = await session.execute(
        select(WebhookEndpoint)
        .where(WebhookEndpoint.customer_id == customer_id)
        .order_by(WebhookEndpoint.created_at, WebhookEndpoint.id)
    )
    return list(rows.scalars())


async def get_endpoint(session: AsyncSession, customer_id: int, endpoint_id: uuid.UUID) -> WebhookEndpoint:
    endpoint = await session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or endpoint.customer_id != customer_id:
        raise NotFound(f"webhook endpoint {endpoint_id} not found")
    return endpoint


def set_enabled(endpoint: WebhookEndpoint, enabled: bool, reason: str | None = None) -> None:
    endpoint.enabled = enabled
    endpoint.disabled_reason = None if enabled else (reason or "disabled by the customer")
    if enabled:
        endpoint.consecutive_failures = 0
        endpoint.failing_since = None


async def update_endpoint(
    session: AsyncSession,
    endpoint: WebhookEndpoint,
    allow_loopback: bool,
    *,
    url: str | None = None,
    description: str | None = None,
    event_types: list[str] | None = None,
    enabled: bool | None = None,
) -> WebhookEndpoint:
    if url is not None:
        endpoint.url = await check_url(url, allow_loopback)
    if description is not None:
        endpoint.description = description.strip()
    if event_types is not None:
        endpoint.event_types = check_event_types(event_types)
    if enabled is not None and enabled != endpoint.enabled:
        set_enabled(endpoint, enabled)
    endpoint.updated_at = utcnow()
    await session.flush()
    return endpoint


async def delete_endpoint(session: AsyncSession, endpoint: WebhookEndpoint) -> None:
    await endpoint_rows.delete_endpoint(session, endpoint)


async def rotate_secret(session: AsyncSession, box: SecretBox, endpoint: WebhookEndpoint) -> str:
    """A new secret; the old one keeps signing alongside it for 24 hours (receivers accept either)."""
    secret = new_secret()
    endpoint.previous_secret_encrypted = endpoint.secret_encrypted
    endpoint.previous_secret_expires_at = utcnow() + PREVIOUS_SECRET_GRACE
    endpoint.secret_encrypted = box.encrypt(secret)
    endpoint.updated_at = utcnow()
    await session.flush()
    return secret


def signing_secrets(box: SecretBox, endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    found = [box.decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires is not None and as_utc(expires) > now:
        found.append(box.decrypt(endpoint.previous_secret_encrypted))
    return found


async def list_deliveries(
    session: AsyncSession, endpoint: WebhookEndpoint, offset: int, limit: int, status: str | None
) -> tuple[list[tuple[WebhookDelivery, Event]], int]:
    where = [WebhookDelivery.endpoint_id == endpoint.id]
    if status:
        where.append(WebhookDelivery.status == status)
    rows = await session.execute(
        select(WebhookDelivery, Event)
        .join(Event, Event.id == WebhookDelivery.event_id)
        .where(*where)
        .order_by(WebhookDelivery.id.desc())
        .offset(offset)
        .limit(limit)
    )
    total = await session.scalar(select(func.count()).select_from(WebhookDelivery).where(*where))
    return [(d, e) for d, e in rows.tuples()], int(total or 0)


async def get_delivery(
    session: AsyncSession, endpoint: WebhookEndpoint, delivery_id: uuid.UUID
) -> tuple[WebhookDelivery, Event]:
    row = (
        await session.execute(
            select(WebhookDelivery, Event)
            .join(Event, Event.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.public_id == delivery_id, WebhookDelivery.endpoint_id == endpoint.id)
        )
    ).first()
    if row is None:
        raise NotFound(f"delivery {delivery_id} not found")
    return row[0], row[1]


async def _latest_delivery(
    session: AsyncSession, endpoint: WebhookEndpoint, event_id: uuid.UUID
) -> tuple[WebhookDelivery, Event]:
    row = (
        await session.execute(
            select(WebhookDelivery, Event)
            .join(Event, Event.id == WebhookDelivery.event_id)
            .where(WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.event_id == event_id)
            .order_by(WebhookDelivery.id.desc())
            .limit(1)
        )
    ).one()
    return row[0], row[1]


def _require_enabled(endpoint: WebhookEndpoint) -> None:
    if not endpoint.enabled:
        raise Conflict(f"webhook endpoint {endpoint.id} is disabled; enable it first")


async def send_test(session: AsyncSession, endpoint: WebhookEndpoint) -> tuple[WebhookDelivery, Event]:
    _require_enabled(endpoint)
    event = await emit(
        session,
        endpoint.customer_id,
        "webhook.test",
        {"endpoint_id": str(endpoint.id), "message": "This is a test event from ProxyPlane."},
        only_endpoint=endpoint.id,
    )
    return await _latest_delivery(session, endpoint, event.id)


async def redeliver(
    session: AsyncSession, endpoint: WebhookEndpoint, delivery_id: uuid.UUID
) -> tuple[WebhookDelivery, Event]:
    """Queue the event of one delivery again (same webhook-id), after the endpoint's pending ones."""
    _require_enabled(endpoint)
    original, event = await get_delivery(session, endpoint, delivery_id)
    now = utcnow()
    again = WebhookDelivery(
        public_id=uuid.uuid4(),
        customer_id=endpoint.customer_id,
        endpoint_id=endpoint.id,
        event_id=original.event_id,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        created_at=now,
    )
    await event_rows.add_deliveries(session, [again])
    return again, event
