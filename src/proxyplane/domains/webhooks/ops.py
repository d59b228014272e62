"""Webhook operations under /customer/webhooks (scope `webhooks`)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, RootModel

from proxyplane.core.bounds import INT32_MAX
from proxyplane.core.errors import Conflict, declares
from proxyplane.core.scopes import Scope
from proxyplane.core.text_input import Label
from proxyplane.domains.events.catalogue import describe
from proxyplane.domains.webhooks import service
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Event, WebhookDelivery, WebhookEndpoint

SCOPES = frozenset({Scope.webhooks})
TAGS = ("webhooks",)


class EventType(BaseModel):
    type: str
    description: str


class EventTypeList(RootModel[list[EventType]]):
    pass


class EndpointRecord(BaseModel):
    endpoint_id: uuid.UUID
    url: str
    description: str
    event_types: list[str] = Field(description="subscribed types; empty means every type")
    enabled: bool
    disabled_reason: str | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime


class EndpointList(RootModel[list[EndpointRecord]]):
    pass


class EndpointCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, max_length=2000, description="https URL that receives the events")
    description: Label = Field(default="", max_length=200)
    event_types: list[str] = Field(default_factory=list, description="types to receive; empty = all")


class EndpointCreated(EndpointRecord):
    secret: str = Field(description="signing secret (whsec_...); shown only in this response")


class EndpointRef(BaseModel):
    endpoint_id: uuid.UUID


class EndpointUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint_id: uuid.UUID
    url: str | None = Field(default=None, min_length=1, max_length=2000)
    description: Label | None = Field(default=None, max_length=200)
    event_types: list[str] | None = None
    enabled: bool | None = None


class SecretRotated(BaseModel):
    endpoint_id: uuid.UUID
    secret: str = Field(description="the new secret; the previous one still signs for 24 hours")
    previous_secret_expires_at: datetime | None


class Message(BaseModel):
    message: str


class DeliveryQuery(BaseModel):
    endpoint_id: uuid.UUID
    status: str | None = Field(default=None, pattern="^(pending|sending|succeeded|failed)$")
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=200)


class DeliveryRef(BaseModel):
    endpoint_id: uuid.UUID
    delivery_id: uuid.UUID


class DeliveryRecord(BaseModel):
    delivery_id: uuid.UUID
    endpoint_id: uuid.UUID
    event_id: uuid.UUID
    webhook_id: str = Field(description="the webhook-id header: the same for every attempt of one event")
    event_type: str
    status: str = Field(description="pending, sending, succeeded or failed")
    attempts: int
    response_status_code: int | None
    response_body: str | None = Field(description="first 1000 characters of the last response")
    error: str | None
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    created_at: datetime
    completed_at: datetime | None
    payload: dict[str, Any]


class DeliveryPage(BaseModel):
    items: list[DeliveryRecord]
    offset: int
    limit: int
    total: int


def endpoint_record(e: WebhookEndpoint) -> EndpointRecord:
    return EndpointRecord(
        endpoint_id=e.id,
        url=e.url,
        description=e.description,
        event_types=list(e.event_types),
        enabled=e.enabled,
        disabled_reason=e.disabled_reason,
        consecutive_failures=e.consecutive_failures,
        created_at=e.created_at,
        updated_at=e.updated_at,
    )


def delivery_record(d: WebhookDelivery, event: Event) -> DeliveryRecord:
    done = d.status in ("succeeded", "failed")
    return DeliveryRecord(
        delivery_id=d.public_id,
        endpoint_id=d.endpoint_id,
        event_id=event.id,
        webhook_id=service.webhook_id(event.id),
        event_type=event.type,
        status=d.status,
        attempts=d.attempts,
        response_status_code=d.response_status,
        response_body=d.response_body,
        error=d.error,
        next_attempt_at=None if done else d.next_attempt_at,
        last_attempt_at=d.last_attempt_at,
        created_at=d.created_at,
        completed_at=d.completed_at,
        payload=service.payload(event),
    )


def _dev(ctx: Context) -> bool:
    return ctx.platform.settings.webhooks_allow_http_loopback


async def list_event_types(ctx: Context, _: None) -> EventTypeList:
    return EventTypeList([EventType(**item) for item in describe()])


async def list_endpoints(ctx: Context, _: None) -> EndpointList:
    return EndpointList(
        [endpoint_record(e) for e in await service.list_endpoints(ctx.session, ctx.customer_id)]
    )


async def create_endpoint(ctx: Context, data: EndpointCreate) -> EndpointCreated:
    endpoint, secret = await service.create_endpoint(
        ctx.session,
        ctx.platform.secrets,
        ctx.customer_id,
        data.url,
        data.description,
        data.event_types,
        _dev(ctx),
    )
    return EndpointCreated(**endpoint_record(endpoint).model_dump(), secret=secret)


async def get_endpoint(ctx: Context, data: EndpointRef) -> EndpointRecord:
    return endpoint_record(await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id))


async def update_endpoint(ctx: Context, data: EndpointUpdate) -> EndpointRecord:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    await service.update_endpoint(
        ctx.session,
        endpoint,
        _dev(ctx),
        url=data.url,
        description=data.description,
        event_types=data.event_types,
        enabled=data.enabled,
    )
    return endpoint_record(endpoint)


async def _toggle(ctx: Context, data: EndpointRef, enabled: bool) -> EndpointRecord:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    await service.update_endpoint(ctx.session, endpoint, _dev(ctx), enabled=enabled)
    return endpoint_record(endpoint)


async def disable_endpoint(ctx: Context, data: EndpointRef) -> EndpointRecord:
    return await _toggle(ctx, data, False)


async def enable_endpoint(ctx: Context, data: EndpointRef) -> EndpointRecord:
    return await _toggle(ctx, data, True)


async def delete_endpoint(ctx: Context, data: EndpointRef) -> Message:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    await service.delete_endpoint(ctx.session, endpoint)
    return Message(message=f"webhook endpoint {data.endpoint_id} deleted")


async def rotate_secret(ctx: Context, data: EndpointRef) -> SecretRotated:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    secret = await service.rotate_secret(ctx.session, ctx.platform.secrets, endpoint)
    return SecretRotated(
        endpoint_id=endpoint.id, secret=secret, previous_secret_expires_at=endpoint.previous_secret_expires_at
    )


async def list_deliveries(ctx: Context, q: DeliveryQuery) -> DeliveryPage:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, q.endpoint_id)
    rows, total = await service.list_deliveries(ctx.session, endpoint, q.offset, q.limit, q.status)
    items = [delivery_record(d, e) for d, e in rows]
    return DeliveryPage(items=items, offset=q.offset, limit=q.limit, total=total)


async def get_delivery(ctx: Context, data: DeliveryRef) -> DeliveryRecord:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    return delivery_record(*await service.get_delivery(ctx.session, endpoint, data.delivery_id))


async def send_test(ctx: Context, data: EndpointRef) -> DeliveryRecord:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    return delivery_record(*await service.send_test(ctx.session, endpoint))


async def redeliver(ctx: Context, data: DeliveryRef) -> DeliveryRecord:
    endpoint = await service.get_endpoint(ctx.session, ctx.customer_id, data.endpoint_id)
    return delivery_record(*await service.redeliver(ctx.session, endpoint, data.delivery_id))


def _op(name: str, summary: str, method: str, path: str, handler: Any, **kw: Any) -> Operation:
    return Operation(
        name=name, summary=summary, method=method, path=path, handler=handler, scopes=SCOPES, tags=TAGS, **kw
    )


BASE = "/customer/webhooks"
EP = BASE + "/{endpoint_id}"
W = Effect.WRITE
register(
    # listed first: /customer/webhooks/events must be routed before /customer/webhooks/{endpoint_id}
    _op(
        "list_webhook_event_types",
        "Event types you can subscribe to.",
        "GET",
        BASE + "/events",
        list_event_types,
        output=EventTypeList,
    ),
    _op(
        "list_webhook_endpoints", "Your webhook endpoints.", "GET", BASE, list_endpoints, output=EndpointList
    ),
    _op(
        "create_webhook_endpoint",
        "Register an https endpoint; the signing secret is shown only once.",
        "POST",
        BASE,
        create_endpoint,
        input=EndpointCreate,
        output=EndpointCreated,
        effect=W,
        status_code=201,
    ),
    _op(
        "get_webhook_endpoint",
        "One webhook endpoint.",
        "GET",
        EP,
        get_endpoint,
        input=EndpointRef,
        output=EndpointRecord,
    ),
    _op(
        "update_webhook_endpoint",
        "Change URL, description, event types or enabled.",
        "PATCH",
        EP,
        update_endpoint,
        input=EndpointUpdate,
        output=EndpointRecord,
        effect=W,
    ),
    _op(
        "delete_webhook_endpoint",
        "Delete an endpoint and its delivery history.",
        "DELETE",
        EP,
        delete_endpoint,
        input=EndpointRef,
        output=Message,
        effect=W,
    ),
    _op(
        "disable_webhook_endpoint",
        "Stop sending to an endpoint (deliveries wait).",
        "POST",
        EP + "/disable",
        disable_endpoint,
        input=EndpointRef,
        output=EndpointRecord,
        effect=W,
    ),
    _op(
        "enable_webhook_endpoint",
        "Resume sending to an endpoint.",
        "POST",
        EP + "/enable",
        enable_endpoint,
        input=EndpointRef,
        output=EndpointRecord,
        effect=W,
    ),
    _op(
        "rotate_webhook_secret",
        "New signing secret (shown once); the old one signs 24 more hours.",
        "POST",
        EP + "/rotate-secret",
        rotate_secret,
        input=EndpointRef,
        output=SecretRotated,
        effect=W,
    ),
    _op(
        "list_webhook_deliveries",
        "Deliveries to an endpoint, newest first.",
        "GET",
        EP + "/deliveries",
        list_deliveries,
        input=DeliveryQuery,
        output=DeliveryPage,
    ),
    _op(
        "get_webhook_delivery",
        "One delivery with its payload.",
        "GET",
        EP + "/deliveries/{delivery_id}",
        get_delivery,
        input=DeliveryRef,
        output=DeliveryRecord,
    ),
    _op(
        "send_webhook_test",
        "Queue a webhook.test event to this endpoint.",
        "POST",
        EP + "/test",
        send_test,
        input=EndpointRef,
        output=DeliveryRecord,
        extra=declares(Conflict),
        effect=W,
        status_code=201,
    ),
    _op(
        "redeliver_webhook",
        "Send a delivery's event again (same webhook-id).",
        "POST",
        EP + "/deliveries/{delivery_id}/redeliver",
        redeliver,
        input=DeliveryRef,
        output=DeliveryRecord,
        extra=declares(Conflict),
        effect=W,
        status_code=201,
    ),
)
