"""Operations: proxy endpoints, credentials, rotating gateway config and whitelist of a service."""

from __future__ import annotations

import uuid

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from proxyplane.core.bounds import IPV4, documented
from proxyplane.core.errors import Conflict, ValidationFailed, declares
from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.rotating_gateway import rotating_gateway, static_ports
from proxyplane.core.scopes import Scope
from proxyplane.domains.proxy import service as proxy
from proxyplane.domains.services import service as services
from proxyplane.domains.services.ops import emit_changed
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Service
from proxyplane.storage.models.prefixes import IPV6_KIND


class ServiceRef(BaseModel):
    service_id: uuid.UUID


class EndpointOut(BaseModel):
    ip: str = Field(description="the exit IPv4 address; IPv6 services: the subnet (CIDR) exits come from")
    country: str
    http: str = Field(description="ip:port of the HTTP proxy (absolute-form requests and CONNECT)")
    https: str | None = Field(description="ip:port of HTTP proxy over TLS (null when not served)")
    socks5: str = Field(description="ip:port of the SOCKS5 proxy")


class IpsOut(BaseModel):
    service_id: uuid.UUID
    product_kind: str
    endpoints: list[EndpointOut] = Field(
        description="one per exit IP of a static service; a rotating service has none (see .../proxy/config)"
    )


class AuthQuery(BaseModel):
    service_id: uuid.UUID
    reveal: bool = False


class AuthIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    rotate_password: bool = Field(default=False, strict=True)  # "yes" is not true
    rotation_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="required with rotate_password: a repeat with the same key does not rotate again",
    )
    login: str | None = Field(
        default=None,
        description="new login: 3-32 of a-z, 0-9, _",
        json_schema_extra=documented(pattern="^[a-z0-9_]{3,32}$"),
    )


class CredentialsOut(BaseModel):
    login: str
    password: str = Field(description="masked unless reveal=true, or the new password right after rotation")
    password_revealed: bool
    password_rotated: bool = Field(description="true only in the response of the call that rotated it")


USERNAME_SYNTAX = (
    "<login>[-country-<cc>[-region-<name|code>][-city-<name>]][-asn-<number>][-session-<sid>]"
    "[-ttl-<1..1440>m|<1..24>h][-strict-1]"
)


class ConfigOut(BaseModel):
    service_id: uuid.UUID
    host: str
    http_port: int | None
    https_port: int | None
    socks5_port: int | None
    session_mode: str
    username_syntax: str
    username_example: str
    ttl_minutes_options: list[int]
    countries: list[str] = Field(
        description="countries of the exit pool (username option country-XX); IPv6: of the service's subnets"
    )
    cities: dict[str, list[str]] = Field(
        default={}, description="per country of the pool, the -city- values its exits have (geo data)"
    )
    ttl_minutes_max: int = Field(default=1440, description="the longest -ttl- a username may set (24 hours)")


class WhitelistIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service_id: uuid.UUID
    ip: str = Field(description="one IPv4 address (no CIDR)", json_schema_extra=IPV4)


class WhitelistDeleteIn(BaseModel):
    service_id: uuid.UUID
    # required, as the seed says (issue 30.6); `ip`, the name whitelist add uses, is accepted for it (issue
    # 22.10). When both are sent, ip_or_cidr is the one used.
    ip_or_cidr: str = Field(
        validation_alias=AliasChoices("ip_or_cidr", "ip"),
        description="the IPv4 address to remove (CIDR is refused with 422); `ip` is accepted for it",
        json_schema_extra=IPV4,
    )

    def address(self) -> str:
        return self.ip_or_cidr


class WhitelistOut(BaseModel):
    service_id: uuid.UUID
    ips: list[str]
    limit: int = Field(description="entries allowed (included + extra whitelist slots add-on)")


def endpoint(ip: str, country: str, gw: GatewaySettings) -> EndpointOut:
    ports = static_ports(gw)
    return EndpointOut(
        ip=ip,
        country=country,
        http=f"{ip}:{ports.http_port}",
        https=f"{ip}:{ports.https_port}" if ports.https_port is not None else None,
        socks5=f"{ip}:{ports.socks5_port}",
    )


async def owned(ctx: Context, service_id: uuid.UUID) -> Service:
    return await services.get_owned(ctx.session, ctx.customer_id, service_id)


async def proxy_ips(ctx: Context, data: ServiceRef) -> IpsOut:
    svc = await owned(ctx, data.service_id)
    gw = GatewaySettings()
    ips = [] if proxy.is_rotating(svc) else await services.service_ips(ctx.session, svc.service_id)
    if svc.product_kind == IPV6_KIND:  # one entry per subnet, all on the IPv4 rotating endpoint
        rot = rotating_gateway()
        return IpsOut(
            service_id=svc.service_id,
            product_kind=svc.product_kind,
            endpoints=[
                EndpointOut(
                    ip=i.address,
                    country=i.country,
                    http=f"{rot.host}:{rot.http_port}",
                    https=f"{rot.host}:{rot.https_port}" if rot.https_port is not None else None,
                    socks5=f"{rot.host}:{rot.socks5_port}",
                )
                for i in ips
            ],
        )
    return IpsOut(
        service_id=svc.service_id,
        product_kind=svc.product_kind,
        endpoints=[endpoint(i.address, i.country, gw) for i in ips],
    )


def credentials(ctx: Context, svc: Service, reveal: bool, rotated: bool = False) -> CredentialsOut:
    box = ctx.platform.secrets
    shown = reveal or rotated
    return CredentialsOut(
        login=svc.login,
        password=services.reveal_password(box, svc) if shown else services.masked_password(box, svc),
        password_revealed=shown,
        password_rotated=rotated,
    )


async def get_auth(ctx: Context, data: AuthQuery) -> CredentialsOut:
    return credentials(ctx, await owned(ctx, data.service_id), data.reveal)


async def put_auth(ctx: Context, data: AuthIn) -> CredentialsOut:
    if not data.rotate_password and data.login is None:
        raise ValidationFailed("send rotate_password=true and/or a new login", field="rotate_password")
    svc = await owned(ctx, data.service_id)
    rotated = await proxy.change_credentials(
        ctx.session,
        ctx.platform.secrets,
        svc,
        rotate=data.rotate_password,
        rotation_key=data.rotation_key,
        login=data.login,
    )
    emit_changed(ctx, svc.service_id)
    return credentials(ctx, svc, False, rotated)


async def get_config(ctx: Context, data: ServiceRef) -> ConfigOut:
    svc = await owned(ctx, data.service_id)
    proxy.require_rotating(svc)
    gw = rotating_gateway()  # the configuration, never the copy stored with old products/services
    settings = await proxy.settings_row(ctx.session, svc)
    cities: dict[str, list[str]] = {}
    if svc.product_kind == IPV6_KIND:  # its subnets' countries (-country-XX picks among them)
        countries = {i.country for i in await services.service_ips(ctx.session, svc.service_id)}
    elif (svc.parameters or {}).get("upstream_pool"):  # a supplier's exits (issue 36.4): not our stock
        countries = set()
    else:
        countries = set((await proxy.exit_pool(ctx.session, svc)).values())
        cities = await proxy.pool_cities(ctx.session, svc)
    return ConfigOut(
        service_id=svc.service_id,
        host=gw.host,
        http_port=gw.http_port,
        https_port=gw.https_port,
        socks5_port=gw.socks5_port,
        session_mode=settings.session_mode,
        username_syntax=USERNAME_SYNTAX,
        username_example=f"{svc.login}-country-us-city-new_york-session-abc123-ttl-24h-strict-1",
        ttl_minutes_options=list(proxy.TTL_MINUTES),
        countries=sorted({c.lower() for c in countries if c}),
        cities=cities,
        ttl_minutes_max=proxy.TTL_MAX_MINUTES,
    )


async def whitelist_out(ctx: Context, svc: Service) -> WhitelistOut:
    return WhitelistOut(
        service_id=svc.service_id,
        ips=await services.whitelist(ctx.session, svc.service_id),
        limit=await proxy.whitelist_limit(ctx.session, svc),
    )


async def get_whitelist(ctx: Context, data: ServiceRef) -> WhitelistOut:
    return await whitelist_out(ctx, await owned(ctx, data.service_id))


async def add_whitelist(ctx: Context, data: WhitelistIn) -> WhitelistOut:
    svc = await owned(ctx, data.service_id)
    await proxy.whitelist_add(ctx.session, svc, data.ip)
    emit_changed(ctx, svc.service_id)
    return await whitelist_out(ctx, svc)


async def delete_whitelist(ctx: Context, data: WhitelistDeleteIn) -> WhitelistOut:
    svc = await owned(ctx, data.service_id)
    await proxy.whitelist_remove(ctx.session, svc, data.address())
    emit_changed(ctx, svc.service_id)
    return await whitelist_out(ctx, svc)


BASE = "/customer/services/{service_id}/proxy"
READ, WRITE = frozenset({Scope.services_read}), frozenset({Scope.services_write})
TAGS = ("proxy",)

register(
    Operation(
        name="get_proxy_ips",
        summary="Proxy endpoints (ip:port for HTTP, HTTPS and SOCKS5) of each exit IP of a static service.",
        method="GET",
        path=f"{BASE}/ips",
        handler=proxy_ips,
        input=ServiceRef,
        output=IpsOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="get_proxy_auth",
        summary="Proxy login and password (masked unless reveal=true).",
        method="GET",
        path=f"{BASE}/auth",
        handler=get_auth,
        input=AuthQuery,
        output=CredentialsOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="update_proxy_auth",
        extra=declares(Conflict),
        summary="Rotate the proxy password (shown once, in this response) and/or change the login. "
        "A repeat with the same rotation_key leaves the same state; new connections need the new password.",
        method="PUT",
        path=f"{BASE}/auth",
        handler=put_auth,
        input=AuthIn,
        output=CredentialsOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="get_proxy_config",
        extra=declares(Conflict),
        summary="Rotating gateway host and ports (HTTP, HTTPS, SOCKS5) and the username option syntax.",
        method="GET",
        path=f"{BASE}/config",
        handler=get_config,
        input=ServiceRef,
        output=ConfigOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="get_proxy_whitelist",
        summary="Client IPv4 addresses allowed without login/password.",
        method="GET",
        path=f"{BASE}/whitelist",
        handler=get_whitelist,
        input=ServiceRef,
        output=WhitelistOut,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="add_proxy_whitelist",
        extra=declares(Conflict),
        summary="Whitelist one IPv4 address (no CIDR; up to the entry limit); adding a present one: no-op.",
        method="POST",
        path=f"{BASE}/whitelist",
        handler=add_whitelist,
        input=WhitelistIn,
        output=WhitelistOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="delete_proxy_whitelist",
        summary="Remove a whitelisted IPv4 address (removing an absent one is a no-op).",
        method="DELETE",
        path=f"{BASE}/whitelist",
        handler=delete_whitelist,
        input=WhitelistDeleteIn,
        output=WhitelistOut,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
)
