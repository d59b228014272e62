"""Operator operations (issue 32): change one service's quota, period or per-GB rate
(`proxyplane admin operator call operator_service_quota_set ...`, the operator API)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel

from proxyplane.core.errors import NotFound
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.quotas.ops import quota_out
from proxyplane.domains.services import service as services
from proxyplane.ops import Context, operator_op, register


class ServiceQuotaChange(BaseModel):
    service_id: uuid.UUID
    quota_bytes: int | None = None
    quota_requests: int | None = None
    quota_period: str | None = None
    gb_price_cents: int | None = None


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


register(operator_op("service_quota_set", service_quota_set, ServiceQuotaChange, permission="catalog.write"))
