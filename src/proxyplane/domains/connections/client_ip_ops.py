"""Operations (issue 32.5, 32.6): read and set a service's limit of distinct client addresses and its
speed limit."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.scopes import Scope
from proxyplane.domains.connections import client_ips, speed
from proxyplane.domains.services import service as services
from proxyplane.ops import Context, Effect, Operation, register

Policy = Literal["refuse_new", "newest_wins"]


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class ClientIpLimitIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    max_client_ips: int | None = Field(
        default=None,
        ge=1,
        le=client_ips.MAX_CLIENT_IPS,
        description="distinct client addresses allowed within the window; null removes the limit",
    )
    policy: Policy = Field(
        default="refuse_new",
        description="refuse_new: a further address is refused (429 client_ip_limit); newest_wins: it is "
        "admitted and the least recently seen address is forgotten",
    )


class ClientIpLimitOut(BaseModel):
    service_id: uuid.UUID
    max_client_ips: int | None = Field(description="null: no limit")
    policy: Policy
    window_seconds: int = Field(description="an address counts while it was seen this recently")


def limit_out(sid: uuid.UUID, lim: client_ips.ClientIpLimit) -> ClientIpLimitOut:
    return ClientIpLimitOut(
        service_id=sid,
        max_client_ips=lim.max_client_ips,
        policy=lim.policy,  # type: ignore[arg-type]
        window_seconds=int(GatewaySettings().client_ip_window_seconds),
    )


async def get_client_ip_limit(ctx: Context, data: ServiceRef) -> ClientIpLimitOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    return limit_out(svc.service_id, client_ips.of(svc.parameters))


async def set_client_ip_limit(ctx: Context, data: ClientIpLimitIn) -> ClientIpLimitOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    lim = await client_ips.set_limit(ctx.session, svc, data.max_client_ips, data.policy)
    sid = svc.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid))
    return limit_out(sid, lim)


class SpeedLimitIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    bytes_per_second: int | None = Field(
        default=None,
        ge=speed.MIN_BPS,
        le=speed.MAX_BPS,
        description="the service's cap, all its tunnels together (both directions); null removes it",
    )


class SpeedLimitOut(BaseModel):
    service_id: uuid.UUID
    bytes_per_second: int | None = Field(description="null: no limit")


async def get_speed_limit(ctx: Context, data: ServiceRef) -> SpeedLimitOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    return SpeedLimitOut(service_id=svc.service_id, bytes_per_second=speed.of(svc.parameters))


async def set_speed_limit(ctx: Context, data: SpeedLimitIn) -> SpeedLimitOut:
    svc = await services.get_owned(ctx.session, ctx.customer_id, data.service_id)
    rate = await speed.set_limit(ctx.session, svc, data.bytes_per_second)
    sid = svc.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid))
    return SpeedLimitOut(service_id=sid, bytes_per_second=rate)


register(
    Operation(
        name="get_speed_limit",
        summary="The service's speed limit in bytes per second (null: none).",
        method="GET",
        path="/customer/services/{service_id}/proxy/speed-limit",
        handler=get_speed_limit,
        input=ServiceRef,
        output=SpeedLimitOut,
        scopes=frozenset({Scope.services_read}),
        tags=("proxy",),
    ),
    Operation(
        name="set_speed_limit",
        summary="Cap a service's throughput in bytes per second, all its tunnels together; null removes "
        "the cap. Free.",
        method="PUT",
        path="/customer/services/{service_id}/proxy/speed-limit",
        handler=set_speed_limit,
        input=SpeedLimitIn,
        output=SpeedLimitOut,
        scopes=frozenset({Scope.services_write}),
        effect=Effect.WRITE,
        tags=("proxy",),
    ),
    Operation(
        name="get_client_ip_limit",
        summary="The service's limit of distinct client addresses (anti-sharing) and its policy.",
        method="GET",
        path="/customer/services/{service_id}/proxy/client-ip-limit",
        handler=get_client_ip_limit,
        input=ServiceRef,
        output=ClientIpLimitOut,
        scopes=frozenset({Scope.services_read}),
        tags=("proxy",),
    ),
    Operation(
        name="set_client_ip_limit",
        summary="Limit how many distinct client addresses may use a service within the window "
        "(refuse_new or newest_wins); null max_client_ips removes the limit. Free.",
        method="PUT",
        path="/customer/services/{service_id}/proxy/client-ip-limit",
        handler=set_client_ip_limit,
        input=ClientIpLimitIn,
        output=ClientIpLimitOut,
        scopes=frozenset({Scope.services_write}),
        effect=Effect.WRITE,
        tags=("proxy",),
    ),
)
