"""Operations: read and set the concurrent-connection limit of a service (total and per IP)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import INT32_MAX
from proxyplane.core.scopes import Scope
from proxyplane.domains.connections import service as connections
from proxyplane.domains.services import service as services
from proxyplane.ops import Context, Effect, Operation, register


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class LimitIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    max_connections: int | None = Field(
        default=None,
        ge=1,
        le=INT32_MAX,
        description="limit for the whole service; omit both fields to use the plan's",
    )
    connections_per_ip: int | None = Field(
        default=None,
        ge=1,
        le=INT32_MAX,
        description="limit per IP; the service's limit becomes this x its IP count",
    )


class LimitsOut(BaseModel):
    service_id: uuid.UUID
    ip_count: int
    included_connections: int = Field(description="included in the plan (connections per IP x IPs)")
    addon_connections: int = Field(description="added by active extra_connections add-ons")
    allowed_connections: int = Field(description="the most this service may be set to")
    custom_limit: int | None = Field(description="the limit you set; null: the plan's allowance applies")
    max_connections: int = Field(
        description="concurrent connections the gateway accepts now, all IPs together"
    )
    connections_per_ip: int | None = Field(description="max_connections spread over the IPs (null: no IPs)")


def limits_out(svc_id: uuid.UUID, lim: connections.Limits) -> LimitsOut:
    return LimitsOut(
        service_id=svc_id,
        ip_count=lim.ip_count,
        included_connections=lim.included_connections,
        addon_connections=lim.addon_connections,
        allowed_connections=lim.allowed_connections,
        custom_limit=lim.custom_limit,
        max_connections=lim.max_connections,
        connections_per_ip=lim.connections_per_ip,
    )


async def get_connection_limits(ctx: Context, data: ServiceRef) -> LimitsOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    return limits_out(svc.service_id, await connections.limits(ctx.session, svc))


async def set_connection_limit(ctx: Context, data: LimitIn) -> LimitsOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    lim = await connections.set_limit(ctx.session, svc, data.max_connections, data.connections_per_ip)
    sid = svc.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid))
    return limits_out(sid, lim)


GET_LIMITS = Operation(
    name="get_connection_limits",
    summary="Concurrent-connection limits of a service: included, from add-ons, your own limit, what the "
    "gateway enforces now, and per IP.",
    method="GET",
    path="/customer/services/{service_id}/proxy/connection-limit",
    handler=get_connection_limits,
    input=ServiceRef,
    output=LimitsOut,
    scopes=frozenset({Scope.services_read}),
    tags=("proxy",),
)
SET_LIMIT = Operation(
    name="set_connection_limit",
    summary="Set your own concurrent-connection limit for a service (in total or per IP), at most what the "
    "plan and add-ons allow; omit both fields to go back to the full allowance. Free.",
    method="PUT",
    path="/customer/services/{service_id}/proxy/connection-limit",
    handler=set_connection_limit,
    input=LimitIn,
    output=LimitsOut,
    scopes=frozenset({Scope.services_write}),
    effect=Effect.WRITE,
    tags=("proxy",),
)
register(GET_LIMITS, SET_LIMIT)
