"""IP lists (`/api/iplist/{typel}/{formatl}/{id}`), credit, and network status.

List lines (all but http-auth work as-is with `curl -x <line> URL`):
    http-ip    ip:port                                   (HTTP, whitelisted client IP)
    socks-ip   socks5h://ip:port                         (SOCKS5, whitelisted client IP)
    http-auth  ip:port@login:password                    (HTTP with the service credentials, the original
                                                          API's form that customers' converters parse)
    ppr-http   login:password@gateway-host:http-port     (rotating gateway)
    ppr-socks  socks5h://login:password@gateway-host:socks-port
txt: one line per proxy, CRLF-terminated; json: array of those strings; csv: one row per proxy with the
columns host,port[,login,password] (no header). A service that is not active lists nothing."""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from pydantic import BaseModel
from sqlalchemy import select

from proxyplane.core.address_prefixes import outside
from proxyplane.core.clock import utcnow
from proxyplane.core.rotating_gateway import rotating_gateway, static_ports
from proxyplane.core.scopes import Scope
from proxyplane.domains.legacy.handlers import owned_service
from proxyplane.domains.legacy.subnet_lists import live_node_prefixes, unserved_subnets
from proxyplane.domains.legacy.wire import CLIENT_NOT_FOUND, legacy_get
from proxyplane.domains.services import service as services
from proxyplane.domains.usage import service as usage
from proxyplane.ops import Context
from proxyplane.storage.models import ServiceIp, StockIp
from proxyplane.storage.models.prefixes import IPV6_KIND

TYPES = ("http-ip", "socks-ip", "http-auth", "ppr-http", "ppr-socks")
FORMATS = ("csv", "txt", "json")
ROTATING = "proxy_rotating"


class ListRef(BaseModel):
    id: str
    typel: str
    formatl: str


class Entry(BaseModel):
    host: str
    port: int
    login: str = ""
    password: str = ""
    scheme: str = ""
    auth_last: bool = False  # http-auth: `ip:port@login:password`

    def line(self) -> str:
        if not self.port:  # an IPv6 service's subnet (CIDR) alone
            return self.host
        if self.auth_last and self.login:
            return f"{self.host}:{self.port}@{self.login}:{self.password}"
        auth = f"{self.login}:{self.password}@" if self.login else ""
        return f"{self.scheme}{auth}{self.host}:{self.port}"


async def ip_list(ctx: Context, ref: ListRef) -> list[Entry] | None:
    """The entries, [] when the service is not active; None when the type does not fit the service."""
    svc = await owned_service(ctx, ref.id)
    rotating = svc.product_kind == ROTATING
    ipv6 = svc.product_kind == IPV6_KIND  # both kinds of types: subnet_lists.py
    if not ipv6 and ref.typel.startswith("ppr-") != rotating:
        return None
    if not services.is_served(svc):
        return []
    if ipv6 and not ref.typel.startswith("ppr-"):
        return [
            Entry(host=ip.address, port=0) for ip in await services.service_ips(ctx.session, svc.service_id)
        ]
    login, password = svc.login, services.reveal_password(ctx.platform.secrets, svc)
    if rotating or ipv6:  # the configured gateway (as v1 proxy/config), never a copy stored with the product
        rgw = rotating_gateway()
        if ref.typel == "ppr-http":
            port, scheme = rgw.http_port, ""
        else:
            port, scheme = rgw.socks5_port, "socks5h://"
        if port is None:  # that listener is not opened
            return []
        return [Entry(host=rgw.host, port=port, login=login, password=password, scheme=scheme)]
    ports = static_ports()  # the same rule as v1 proxy_ips
    http_port, socks_port = ports.http_port, ports.socks5_port
    out = []
    for ip in await services.service_ips(ctx.session, svc.service_id):
        if ref.typel == "http-ip":
            out.append(Entry(host=ip.address, port=http_port))
        elif ref.typel == "socks-ip":
            out.append(Entry(host=ip.address, port=socks_port, scheme="socks5h://"))
        else:
            out.append(Entry(host=ip.address, port=http_port, login=login, password=password, auth_last=True))
    return out


def as_txt(entries: list[Entry]) -> str:
    return "".join(e.line() + "\r\n" for e in entries)


def as_csv(entries: list[Entry]) -> str:
    rows = []
    for e in entries:
        cells = [e.host] + ([str(e.port)] if e.port else []) + ([e.login, e.password] if e.login else [])
        rows.append(",".join(cells) + "\r\n")
    return "".join(rows)


def as_json(entries: list[Entry]) -> list[str]:
    return [e.line() for e in entries]


class StatusRef(BaseModel):
    id: str


async def inactive_ips(ctx: Context, ref: StatusRef) -> list[str]:
    """IPs of the service that are not served: all of them while the service is not active, otherwise
    those the operator retired from stock (still allocated until a refresh replaces them) and those no
    live gateway node can serve (local to none of their hosts' published prefixes), in allocation order."""
    svc = await owned_service(ctx, ref.id, CLIENT_NOT_FOUND, 400)
    if svc.product_kind == ROTATING:
        return []
    if svc.product_kind == IPV6_KIND:
        return await unserved_subnets(ctx.session, svc, services.is_served(svc))
    held = await services.service_ips(ctx.session, svc.service_id)
    if not services.is_served(svc):
        return [ip.address for ip in held]
    retired = await ctx.session.execute(
        select(ServiceIp.address)
        .join(StockIp, StockIp.id == ServiceIp.ip_id)
        .where(
            ServiceIp.service_id == svc.service_id,
            ServiceIp.released_at.is_(None),
            StockIp.retired_at.is_not(None),
        )
        .order_by(ServiceIp.id)
    )
    out = set(retired.scalars())
    live = await live_node_prefixes(ctx.session)
    if live is not None:
        out.update(outside([ip.address for ip in held], live))
    return [ip.address for ip in held if ip.address in out]


ERROR_WINDOW = timedelta(minutes=15)


async def error_ips(ctx: Context, ref: StatusRef) -> list[str]:
    """Exit IPs of the service whose upstream connections failed (connect error, refused, timeout, as
    metered by the gateway per exit IP) in the last ERROR_WINDOW (15 minutes, counted in whole minutes),
    sorted; [] when all were healthy. Only IPs the service can still use are listed: the allocated
    (unreleased) IPs of a static service, any exit IP of a rotating one."""
    svc = await owned_service(ctx, ref.id, CLIENT_NOT_FOUND, 400)
    now = utcnow()
    failing = await usage.errors_by_exit_ip(ctx.session, svc.service_id, now - ERROR_WINDOW, now)
    if svc.product_kind != ROTATING:
        held = {ip.address for ip in await services.service_ips(ctx.session, svc.service_id)}
        failing = {ip: n for ip, n in failing.items() if ip in held}
    return sorted(failing, key=_ip_order)


def _ip_order(address: str) -> tuple[int, int]:
    net = ipaddress.ip_network(address, strict=False)  # an exit IP, or an IPv6 service's subnet (CIDR)
    return net.version, int(net.network_address)


_op = legacy_get


IPLIST = _op("iplist", ip_list, ListRef, {Scope.services_read})
INACTIVE = _op("networkstatus_inactive", inactive_ips, StatusRef, {Scope.services_read})
ERRORS = _op("networkstatus_errors", error_ips, StatusRef, {Scope.usage_read})
