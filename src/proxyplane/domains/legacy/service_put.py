"""PUT /api/service/{id}: setip, update_list (throttled), password. All actions of one call share one
transaction: a refused action (422, 429) leaves the others undone too."""

from __future__ import annotations

import base64
import binascii
import math
import os
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import DomainError, ValidationFailed
from proxyplane.core.scopes import Scope
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.ips import service as ips
from proxyplane.domains.legacy import service as legacy
from proxyplane.domains.legacy.handlers import owned_service
from proxyplane.domains.legacy.wire import CLIENT_NOT_FOUND, INVALID_IPV4, TOO_MANY, fail, timestamp
from proxyplane.domains.services.ops import emit_changed
from proxyplane.ops import LEGACY, Context, Effect, Operation
from proxyplane.storage.models import Service

UPDATE_LIST_LIMIT = 1  # updates per interval (X-RateLimit-Limit)


def update_list_interval() -> timedelta:
    """Minimum time between two IP list updates of one service (PROXYPLANE_LEGACY_UPDATE_LIST_SECONDS)."""
    return timedelta(seconds=int(os.environ.get("PROXYPLANE_LEGACY_UPDATE_LIST_SECONDS", "3600")))


class PutService(BaseModel):
    id: str
    setip: Any = None
    update_list: Any = None
    password: Any = None


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "1"))


def _decode_password(value: Any) -> str:
    if not isinstance(value, str):
        raise fail()
    try:
        return base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise fail() from None


async def put_service(ctx: Context, data: PutService) -> dict[str, Any]:
    svc = await owned_service(ctx, data.id, CLIENT_NOT_FOUND, 400)
    done: dict[str, Any] = {}
    if data.setip is not None:
        if not isinstance(data.setip, str):
            raise fail(INVALID_IPV4)
        try:
            ip = await legacy.bind_ip(ctx.session, svc, data.setip)
        except ValidationFailed:
            raise fail(INVALID_IPV4) from None
        except DomainError:  # e.g. the whitelist is full of entries made through v1
            raise fail() from None
        done["setip"] = f"IP {ip} bound successfully"
    if data.update_list is not None and _truthy(data.update_list):
        await _update_list(ctx, svc)
        done["update_list"] = "IP list updated successfully"
    if data.password is not None:
        password = _decode_password(data.password)
        try:
            await legacy.set_proxy_password(ctx.session, ctx.platform.secrets, svc, password)
        except DomainError:
            raise fail() from None
        done["password"] = "Password changed successfully"
    if done:
        emit_changed(ctx, svc.service_id)
    return done


async def _update_list(ctx: Context, svc: Service) -> None:
    interval = update_list_interval()
    now = utcnow()
    next_at = await legacy.claim_list_update(ctx.session, svc.service_id, interval, now)
    if next_at is not None:
        wait = max(1, math.ceil((next_at - now).total_seconds()))
        raise fail(
            TOO_MANY.format(next=timestamp(next_at)),
            429,
            {
                "Retry-After": str(wait),
                "X-RateLimit-Limit": str(UPDATE_LIST_LIMIT),
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": str(int(next_at.timestamp())),
            },
        )
    await _refresh(ctx, svc)


async def _refresh(ctx: Context, svc: Service) -> None:
    """The v1 IP refresh of the whole list (domains/ips): free once per free window, otherwise charged
    to the credit at the refresh price. Refused (422) when the service is not active or the credit is
    short; the throttle clock then stays untouched (same transaction)."""
    partner = (await get_customer(ctx.session, ctx.customer_id)).partner_discount_percent
    try:
        await ips.refresh(ctx.session, svc, None, partner, can_spend=True)
    except DomainError:
        raise fail() from None


PUT = Operation(
    name="legacy_put_service",
    doors=LEGACY,
    summary="legacy API: update a service",
    method="PUT",
    path="/api/service/{id}",
    handler=put_service,
    input=PutService,
    scopes=frozenset({Scope.services_write, Scope.wallet_spend}),
    # update_list charges the refresh price once the free refresh of the window is used (issue 20)
    effect=Effect.SPENDS_MONEY,
    mcp=False,
)
