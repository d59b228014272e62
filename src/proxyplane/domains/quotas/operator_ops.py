"""Operator operations (issue 32): read and change one service's quota, period or per-GB rate
(`proxyplane admin operator call operator_service_quota_set ...`, the operator API and its MCP endpoint,
the console's service quota page)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel

from proxyplane.core.errors import NotFound
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.quotas.ops import quota_out
from proxyplane.domains.services import service as services
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register


class ServiceQuotaRef(BaseModel):
    service_id: uuid.UUID


class ServiceQuotaChange(BaseModel):
    service_id: uuid.UUID
    quota_bytes: int | None = None
    quota_requests: int | None = None
    quota_period: str | None = None
    gb_price_cents: int | None = None


async def service_quota_show(ctx: Context, data: ServiceQuotaRef) -> dict[str, Any]:
    """The service's current period (as the customer's quota read) and whose it is; 404 without a quota."""
    svc = await services.get_by_service_id(ctx.session, data.service_id)
    usage = None if svc is None else await quotas.usage(ctx.session, svc)
    if svc is None or usage is None:
        raise NotFound(f"service {data.service_id} has no traffic quota")
    return {
        **quota_out(usage).model_dump(mode="json"),
        "customer_id": svc.customer_id,
        "number": svc.number,
        "login": svc.login,
    }


async def service_quota_set(ctx: Context, data: ServiceQuotaChange) -> dict[str, Any]:
    svc = await services.get_by_service_id(ctx.session, data.service_id)
    if svc is None:
        raise NotFound(f"service {data.service_id} not found")
    usage = await quotas.set_plan(
        ctx.session,
        svc,
        quota_bytes=data.quota_bytes,
        quota_requests=data.quota_requests,
        period=data.quota_period,
        gb_price_cents=data.gb_price_cents,
    )
    return quota_out(usage).model_dump(mode="json")


register(
    operator_op(
        "service_quota_show",
        service_quota_show,
        ServiceQuotaRef,
        Effect.READ,
        permission="customers.read",
        doors=OPERATOR_DOORS,
    )
)
register(
    operator_op(
        "service_quota_set",
        service_quota_set,
        ServiceQuotaChange,
        permission="catalog.write",
        doors=OPERATOR_DOORS,  # the console's service quota page too
    )
)
