"""Webhook endpoints: list, create (secret shown once), edit, disable/enable, delete (confirmed), rotate the
secret (shown once), send a test event, deliveries with redelivery. Each action is the REST operation."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, redirect, render, require_login
from proxyplane.adapters.web.forms import (
    ALREADY_SENT,
    forget_reveal,
    form_key,
    new_token,
    reveal,
    take_reveal,
)
from proxyplane.adapters.web.money_pages import as_list, int_param
from proxyplane.core.errors import DomainError, NotFound
from proxyplane.domains.webhooks.ops import EndpointCreated, SecretRotated

router = APIRouter(route_class=WebRoute, include_in_schema=False)
DELIVERY_PAGE = 25
STATUSES = ("pending", "sending", "succeeded", "failed")
CREATE = "create_webhook_endpoint"
ROTATE = "rotate_webhook_secret"


def path_uuid(request: Request, name: str, what: str) -> str:
    try:
        return str(uuid.UUID(request.path_params[name]))
    except ValueError:
        raise NotFound(f"{what} not found") from None


def endpoint_id(request: Request) -> str:
    return path_uuid(request, "endpoint_id", "webhook endpoint")


def fields(data: dict[str, Any]) -> dict[str, Any]:
    """The endpoint fields of a posted form; no event type ticked means every type."""
    return {
        "url": str(data.get("url", "")).strip(),
        "description": str(data.get("description", "")).strip(),
        "event_types": as_list(data.get("event_types")),
    }


async def _list(
    request: Request,
    status: int = 200,
    errors: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> Response:
    endpoints = await call(request, "list_webhook_endpoints")
    types = await call(request, "list_webhook_event_types")
    response = render(
        request,
        "webhooks.html",
        status=status,
        endpoints=endpoints.root,
        event_types=types.root,
        created=take_reveal(request, CREATE, EndpointCreated),
        form_token=new_token(),
        values=values or {"url": "", "description": "", "event_types": []},
        errors=errors or {},
    )
    return forget_reveal(request, response)


@router.get("/webhooks")
async def webhooks(request: Request) -> Response:
    await require_login(request)
    return await _list(request)


@router.post("/webhooks")
async def create(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body = fields(data)
    try:
        created = await call(request, CREATE, body, form_key(data))
    except ALREADY_SENT:
        return redirect(request, "/webhooks", "That form was already sent: the endpoint exists once.")
    except DomainError as exc:
        return await _list(request, exc.http_status, {"create": exc.message}, values=body)
    response = redirect(request, "/webhooks#new-secret", "Endpoint added.")
    reveal(request, response, CREATE, created)
    return response


async def _endpoint(
    request: Request,
    status: int = 200,
    errors: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> Response:
    eid = endpoint_id(request)
    endpoint = await call(request, "get_webhook_endpoint", {"endpoint_id": eid})
    types = await call(request, "list_webhook_event_types")
    wanted = request.query_params.get("status", "")
    query: dict[str, Any] = {
        "endpoint_id": eid,
        "offset": int_param(request, "offset"),
        "limit": DELIVERY_PAGE,
    }
    if wanted in STATUSES:
        query["status"] = wanted
    deliveries = await call(request, "list_webhook_deliveries", query)
    response = render(
        request,
        "webhook.html",
        status=status,
        endpoint=endpoint,
        event_types=types.root,
        values=values or endpoint.model_dump(),
        deliveries=deliveries,
        status_filter=query.get("status", ""),
        statuses=STATUSES,
        secret=take_reveal(request, f"{ROTATE}:{eid}", SecretRotated),
        errors=errors or {},
    )
    return forget_reveal(request, response)


@router.get("/webhooks/{endpoint_id}")
async def endpoint(request: Request) -> Response:
    await require_login(request)
    return await _endpoint(request)


@router.post("/webhooks/{endpoint_id}")
async def update(request: Request) -> Response:
    await require_login(request)
    body = fields(await form(request))
    eid = endpoint_id(request)
    try:
        await call(request, "update_webhook_endpoint", {"endpoint_id": eid, **body})
    except DomainError as exc:
        return await _endpoint(request, exc.http_status, {"edit": exc.message}, values=body)
    return redirect(request, f"/webhooks/{eid}", "Endpoint saved.")


async def _action(request: Request, op: str, done: str) -> Response:
    """A button on the endpoint page: run `op` on the endpoint, then back to the page with `done`."""
    await require_login(request)
    await form(request)
    eid = endpoint_id(request)
    try:
        await call(request, op, {"endpoint_id": eid})
    except DomainError as exc:
        return await _endpoint(request, exc.http_status, {"actions": exc.message})
    return redirect(request, f"/webhooks/{eid}", done)


@router.post("/webhooks/{endpoint_id}/disable")
async def disable(request: Request) -> Response:
    return await _action(
        request, "disable_webhook_endpoint", "Endpoint disabled: deliveries wait until enabled."
    )


@router.post("/webhooks/{endpoint_id}/enable")
async def enable(request: Request) -> Response:
    return await _action(request, "enable_webhook_endpoint", "Endpoint enabled: waiting deliveries resume.")


@router.post("/webhooks/{endpoint_id}/test")
async def send_test(request: Request) -> Response:
    return await _action(
        request, "send_webhook_test", "Test event queued; it appears in the deliveries below."
    )


@router.post("/webhooks/{endpoint_id}/rotate-secret")
async def rotate(request: Request) -> Response:
    await require_login(request)
    await form(request)
    eid = endpoint_id(request)
    try:
        rotated = await call(request, ROTATE, {"endpoint_id": eid})
    except DomainError as exc:
        return await _endpoint(request, exc.http_status, {"actions": exc.message})
    response = redirect(request, f"/webhooks/{eid}#new-secret", "Signing secret rotated.")
    reveal(request, response, f"{ROTATE}:{eid}", rotated)
    return response


@router.get("/webhooks/{endpoint_id}/delete")
async def confirm_delete(request: Request) -> Response:
    await require_login(request)
    found = await call(request, "get_webhook_endpoint", {"endpoint_id": endpoint_id(request)})
    return render(request, "webhook_delete.html", endpoint=found)


@router.post("/webhooks/{endpoint_id}/delete")
async def delete(request: Request) -> Response:
    await require_login(request)
    await form(request)
    await call(request, "delete_webhook_endpoint", {"endpoint_id": endpoint_id(request)})
    return redirect(request, "/webhooks", "Endpoint deleted with its delivery history.")


def _delivery_ref(request: Request) -> dict[str, str]:
    return {"endpoint_id": endpoint_id(request), "delivery_id": path_uuid(request, "delivery_id", "delivery")}


@router.get("/webhooks/{endpoint_id}/deliveries/{delivery_id}")
async def delivery(request: Request) -> Response:
    await require_login(request)
    ref = _delivery_ref(request)
    found = await call(request, "get_webhook_delivery", ref)
    endpoint = await call(request, "get_webhook_endpoint", {"endpoint_id": ref["endpoint_id"]})
    payload = json.dumps(found.payload, indent=2, sort_keys=True, default=str)
    return render(request, "webhook_delivery.html", delivery=found, endpoint=endpoint, payload=payload)


@router.post("/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver")
async def redeliver(request: Request) -> Response:
    await require_login(request)
    await form(request)
    ref = _delivery_ref(request)
    try:
        again = await call(request, "redeliver_webhook", ref)
    except DomainError as exc:
        return await _endpoint(request, exc.http_status, {"deliveries": exc.message})
    return redirect(
        request,
        f"/webhooks/{ref['endpoint_id']}",
        f"Event {again.webhook_id} queued again (same webhook-id).",
    )
