"""Operations: sub-users of a service (issue 18). REST under /customer/services/{service_id}/subusers;
the same declarations serve MCP and the dashboard (through invoke)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import IPV4, documented
from proxyplane.core.errors import Conflict, declares
from proxyplane.core.scopes import Scope
from proxyplane.domains.services import service as services
from proxyplane.domains.services.ops import emit_changed
from proxyplane.domains.subusers import service as subusers
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Service
from proxyplane.storage.models.subusers import ServiceSubuser

LOGIN = documented(pattern="^[a-z0-9_]{3,32}$")
NAME_HELP = "your own label for the sub-user (who or what uses it), up to 64 characters; null: none"
COUNTRIES = Field(
    default=None,
    max_length=250,
    description="ISO 3166-1 alpha-2 codes the sub-user may exit from (rotating services); null: any",
    json_schema_extra=documented(items={"type": "string", "pattern": "^[A-Za-z]{2}$"}),
)


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class SubuserRef(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID


REVEAL = Field(default=False, description="include the password(s) in clear (as get_proxy_auth's reveal)")


class SubuserListQuery(ServiceRef):
    reveal: bool = REVEAL


class SubuserQuery(SubuserRef):
    reveal: bool = REVEAL


class LimitsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool | None = Field(default=None, strict=True)
    traffic_limit_bytes: int | None = Field(
        default=None, ge=1, le=2**62, description="bytes (up + down); bandwidth plans. null: no limit"
    )
    traffic_limit_requests: int | None = Field(
        default=None, ge=1, le=2**62, description="requests; request plans. null: no limit"
    )
    max_connections: int | None = Field(
        default=None, ge=1, le=1_000_000, description="concurrent connections, at most the service's"
    )
    countries: list[str] | None = COUNTRIES
    max_client_ips: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="distinct client addresses within the window (as the service's; counted for it too); "
        "null: only the service's limit",
    )
    client_ip_policy: Literal["refuse_new", "newest_wins"] | None = Field(
        default=None, description="refuse_new (429 client_ip_limit, the default) or newest_wins"
    )
    speed_limit_bps: int | None = Field(
        default=None,
        ge=1000,
        le=10**11,
        description="bytes/s cap of this sub-user's traffic (its service's cap holds too); null: none",
    )


class SubuserIn(LimitsIn):
    service_id: uuid.UUID
    login: str | None = Field(
        default=None, description="3-32 of a-z, 0-9, _ (generated when absent)", json_schema_extra=LOGIN
    )
    name: str | None = Field(default=None, min_length=1, max_length=64, description=NAME_HELP)


class SubuserPatch(LimitsIn):
    service_id: uuid.UUID
    subuser_id: uuid.UUID
    login: str | None = Field(default=None, description="new login", json_schema_extra=LOGIN)
    name: str | None = Field(default=None, max_length=64, description=NAME_HELP + " (empty: none)")
    reset_usage: bool = Field(
        default=False, strict=True, description="zero used_bytes / used_requests (a new allowance)"
    )


class SubuserWhitelistIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    subuser_id: uuid.UUID
    ip: str = Field(description="one IPv4 address (no CIDR)", json_schema_extra=IPV4)


class SubuserOut(BaseModel):
    subuser_id: uuid.UUID
    service_id: uuid.UUID
    login: str
    name: str | None = Field(description="the customer's label; null: none")
    password: str = Field(
        description="masked, except in the response that created or rotated it (once) or with reveal=true"
    )
    password_revealed: bool
    enabled: bool
    traffic_limit_bytes: int | None
    traffic_limit_requests: int | None
    max_connections: int | None
    countries: list[str] | None
    max_client_ips: int | None
    client_ip_policy: str = Field(description="refuse_new or newest_wins")
    speed_limit_bps: int | None
    whitelist: list[str] = Field(description="IPv4 addresses (they use the service's whitelist slots)")
    used_bytes: int
    used_requests: int
    limit_reached: bool = Field(description="a traffic limit is reached: the gateway refuses the sub-user")
    usage_pct: int = Field(description="highest usage threshold reached: 0, 80 or 100")
    created_at: datetime
    updated_at: datetime


class SubuserList(BaseModel):
    service_id: uuid.UUID
    items: list[SubuserOut]


class Deleted(BaseModel):
    message: str


MASK = "********"


def out(sub: ServiceSubuser, whitelist: list[str], password: str | None = None) -> SubuserOut:
    return SubuserOut(
        subuser_id=sub.subuser_id,
        service_id=sub.service_id,
        login=sub.login,
        name=sub.name,
        password=password if password is not None else MASK,
        password_revealed=password is not None,
        enabled=sub.enabled,
        traffic_limit_bytes=sub.traffic_limit_bytes,
        traffic_limit_requests=sub.traffic_limit_requests,
        max_connections=sub.max_connections,
        countries=sub.countries,
        max_client_ips=sub.max_client_ips,
        client_ip_policy=sub.client_ip_policy or "refuse_new",
        speed_limit_bps=sub.speed_limit_bps,
        whitelist=whitelist,
        used_bytes=sub.used_bytes,
        used_requests=sub.used_requests,
        limit_reached=sub.limit_reached,
        usage_pct=sub.notified_pct,
        created_at=sub.created_at,
        updated_at=sub.updated_at,
    )


async def owned(ctx: Context, service_id: uuid.UUID) -> Service:
    return await services.get_owned(ctx.session, ctx.customer_id, service_id)


async def owned_subuser(
    ctx: Context, data: SubuserRef | SubuserQuery | SubuserPatch | SubuserWhitelistIn
) -> tuple[Service, ServiceSubuser]:
    svc = await owned(ctx, data.service_id)
    return svc, await subusers.get_owned(ctx.session, svc, data.subuser_id)


async def record(ctx: Context, sub: ServiceSubuser, password: str | None = None) -> SubuserOut:
    await ctx.session.refresh(sub)  # server-side values (updated_at) after the flush
    return out(sub, (await subusers.whitelists(ctx.session, [sub.id]))[sub.id], password)


def revealed(ctx: Context, sub: ServiceSubuser, reveal: bool) -> str | None:
    return ctx.platform.secrets.decrypt(sub.password_enc) if reveal else None


async def list_subusers(ctx: Context, data: SubuserListQuery) -> SubuserList:
    svc = await owned(ctx, data.service_id)
    subs = await subusers.list_for_service(ctx.session, svc.service_id)
    wl = await subusers.whitelists(ctx.session, [s.id for s in subs])
    items = [out(s, wl[s.id], revealed(ctx, s, data.reveal)) for s in subs]
    return SubuserList(service_id=svc.service_id, items=items)


async def get_subuser(ctx: Context, data: SubuserQuery) -> SubuserOut:
    _svc, sub = await owned_subuser(ctx, data)
    return await record(ctx, sub, revealed(ctx, sub, data.reveal))


async def create_subuser(ctx: Context, data: SubuserIn) -> SubuserOut:
    svc = await owned(ctx, data.service_id)
    fields = data.model_dump(include=(set(LimitsIn.model_fields) | {"name"}) & data.model_fields_set)
    sub, password = await subusers.create(ctx.session, ctx.platform.secrets, svc, data.login, fields)
    emit_changed(ctx, svc.service_id)
    return await record(ctx, sub, password)


async def update_subuser(ctx: Context, data: SubuserPatch) -> SubuserOut:
    svc, sub = await owned_subuser(ctx, data)
    changes = data.model_dump(
        include=(set(LimitsIn.model_fields) | {"login", "name"}) & data.model_fields_set
    )
    if changes.get("enabled") is None:
        changes.pop("enabled", None)
    if "login" in changes and changes["login"] is None:
        changes.pop("login")
    await subusers.update(ctx.session, svc, sub, changes, data.reset_usage)
    emit_changed(ctx, svc.service_id)
    return await record(ctx, sub)


async def rotate_password(ctx: Context, data: SubuserRef) -> SubuserOut:
    svc, sub = await owned_subuser(ctx, data)
    password = await subusers.rotate_password(ctx.session, ctx.platform.secrets, svc, sub)
    emit_changed(ctx, svc.service_id)
    return await record(ctx, sub, password)


async def delete_subuser(ctx: Context, data: SubuserRef) -> None:
    svc, sub = await owned_subuser(ctx, data)
    await subusers.remove(ctx.session, svc, sub)
    emit_changed(ctx, svc.service_id)


async def add_whitelist(ctx: Context, data: SubuserWhitelistIn) -> SubuserOut:
    svc, sub = await owned_subuser(ctx, data)
    await subusers.whitelist_add(ctx.session, svc, sub, data.ip)
    emit_changed(ctx, svc.service_id)
    return await record(ctx, sub)


async def delete_whitelist(ctx: Context, data: SubuserWhitelistIn) -> SubuserOut:
    svc, sub = await owned_subuser(ctx, data)
    await subusers.whitelist_remove(ctx.session, svc, sub, data.ip)
    emit_changed(ctx, svc.service_id)
    return await record(ctx, sub)


BASE = "/customer/services/{service_id}/subusers"
ONE = BASE + "/{subuser_id}"
READ, WRITE = frozenset({Scope.services_read}), frozenset({Scope.services_write})
TAGS = ("subusers",)

register(
    Operation(
        name="list_subusers",
        summary="Sub-users of a service: logins of its own with names, limits, whitelist and usage "
        "(passwords masked unless reveal=true).",
        method="GET",
        path=BASE,
        handler=list_subusers,
        input=SubuserListQuery,
        output=SubuserList,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="create_subuser",
        extra=declares(Conflict),
        summary="Create a sub-user (login generated when absent, optional name); its password is shown "
        "in this response. Limits: traffic (the plan's unit), connections (at most the service's), "
        "countries.",
        method="POST",
        path=BASE,
        handler=create_subuser,
        input=SubuserIn,
        output=SubuserOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        status_code=201,
        tags=TAGS,
    ),
    Operation(
        name="get_subuser",
        summary="One sub-user (password masked unless reveal=true).",
        method="GET",
        path=ONE,
        handler=get_subuser,
        input=SubuserQuery,
        output=SubuserOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="update_subuser",
        extra=declares(Conflict),
        summary="Change a sub-user: enabled, login, name, limits (null clears one), countries; "
        "reset_usage=true zeroes its usage. A limit raised above the usage lets it through again.",
        method="PATCH",
        path=ONE,
        handler=update_subuser,
        input=SubuserPatch,
        output=SubuserOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="delete_subuser",
        summary="Delete a sub-user: its login stops working on every gateway node.",
        method="DELETE",
        path=ONE,
        handler=delete_subuser,
        input=SubuserRef,
        output=None,
        scopes=WRITE,
        effect=Effect.WRITE,
        status_code=204,
        tags=TAGS,
    ),
    Operation(
        name="rotate_subuser_password",
        summary="New password for a sub-user, shown once in this response; the old one stops working.",
        method="POST",
        path=ONE + "/password",
        handler=rotate_password,
        input=SubuserRef,
        output=SubuserOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="add_subuser_whitelist",
        extra=declares(Conflict),
        summary="Whitelist one IPv4 address for a sub-user (uses one of the service's whitelist slots); "
        "adding a present one: no-op.",
        method="POST",
        path=ONE + "/whitelist",
        handler=add_whitelist,
        input=SubuserWhitelistIn,
        output=SubuserOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="delete_subuser_whitelist",
        summary="Remove a whitelisted IPv4 address of a sub-user (removing an absent one is a no-op).",
        method="DELETE",
        path=ONE + "/whitelist",
        handler=delete_whitelist,
        input=SubuserWhitelistIn,
        output=SubuserOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
)
