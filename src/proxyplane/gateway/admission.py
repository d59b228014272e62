"""Who may open what: the checks both tunnel paths make (the Python protocol classes and the C engine's
decisions in ``tunnels.py`` / ``tunnel_socks.py``), kept in one place so both answer alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .access import AuthError, Grant, ServiceEntry, authenticate
from .auth_reasons import AuthFailure, not_whitelisted_text
from .client_ips import CLIENT_IP_LIMIT
from .protocol import socks5
from .protocol.http_proxy import Credentials
from .protocol.http_response import auth_required, build_reply
from .protocol.username import UsernameError
from .quotas import INSUFFICIENT_BALANCE, QUOTA_EXHAUSTED, proxy_status
from .routing import RoutingError
from .upstream import literal_family

if TYPE_CHECKING:
    from .context import Context


def http_credentials(ctx: Context, static_ip: str | None, client_ip: str, auth: Credentials | None,
                     host: str) -> Grant | bytes:
    """The grant for an HTTP request's credentials (or, without any, the client IP's whitelist entry);
    else the refusing reply (407, or 403 for an inactive service), the error counted."""
    try:
        if auth is None:
            return authenticate(ctx.access, static_ip, client_ip, None, None)
        # a login and password: guessing slowed per source address (auth_throttle.py)
        return ctx.auth_throttle.authenticate(ctx.access, static_ip, client_ip, auth.login, auth.password)
    except UsernameError as exc:
        ctx.error(None, host, "username")
        return auth_required(str(exc))
    except AuthError as exc:
        ctx.error(exc.service_id, host, exc.reason)
        if exc.reason == QUOTA_EXHAUSTED:  # 402: buy more traffic (gateway/quotas.py)
            status = proxy_status(QUOTA_EXHAUSTED, "traffic quota used up")
            return build_reply(402, str(exc), headers=(status,))
        if exc.reason == INSUFFICIENT_BALANCE:  # 402: top up the wallet (pay as you go)
            status = proxy_status(INSUFFICIENT_BALANCE, "the wallet cannot pay for the next unit")
            return build_reply(402, str(exc), headers=(status,))
        if exc.reason == CLIENT_IP_LIMIT:  # 429: too many client addresses (gateway/client_ips.py)
            status = proxy_status(CLIENT_IP_LIMIT, "too many client addresses for this service")
            return build_reply(429, str(exc), headers=(status,))
        if exc.reason == AuthFailure.SUSPENDED:
            return build_reply(403, str(exc))
        if exc.reason == AuthFailure.NOT_WHITELISTED:
            return auth_required(not_whitelisted_text(client_ip))  # the address the customer must whitelist
        return auth_required(str(exc))


class SocksRefusal(Exception):
    """A SOCKS5 request refused: the reply code, the error category, and whom/what to count it for."""

    def __init__(self, rep: int, reason: str, service_id: str | None, host: str) -> None:
        super().__init__(reason)
        self.rep, self.reason, self.service_id, self.host = rep, reason, service_id, host


def socks_admit(ctx: Context, grant: Grant, static_ip: str | None, command: int, host: str) -> str:
    """The exit IP for a SOCKS5 CONNECT / UDP ASSOCIATE, with the service's connection slot taken;
    SocksRefusal (nothing taken) when the service is no longer active, UDP is not allowed, no exit IP
    fits or the connection limit is reached."""
    service = grant.service
    sid = service.service_id
    current = ctx.access.get(sid)
    if current is None or not current.active:
        raise SocksRefusal(socks5.REP_NOT_ALLOWED, "inactive", None, host)
    if command == socks5.CMD_UDP_ASSOCIATE and not service.udp_allowed:
        raise SocksRefusal(socks5.REP_NOT_ALLOWED, "udp_not_allowed", sid, "")
    family = literal_family(host) if command == socks5.CMD_CONNECT else None
    try:
        if service.upstream_pool is not None:  # through a supplier (upstream_pools.py): no exit IP here
            if command != socks5.CMD_CONNECT:
                raise RoutingError("UDP is not served through an upstream pool", "udp_not_allowed")
            exit_ip = ""
        else:
            exit_ip = ctx.router.choose(grant, static_ip, family)
    except RoutingError as exc:
        rep = socks5.REP_ADDRESS_TYPE_NOT_SUPPORTED if exc.reason == "address_family" else \
            socks5.REP_NETWORK_UNREACHABLE
        raise SocksRefusal(rep, exc.reason, sid, host) from exc
    refused = take_slot(ctx, service)
    if refused == "limit":
        raise SocksRefusal(socks5.REP_NOT_ALLOWED, "limit", sid, host)
    if refused is not None:
        raise SocksRefusal(socks5.REP_GENERAL_FAILURE, "capacity", sid, host)
    return exit_ip


def take_slot(ctx: Context, service: ServiceEntry) -> str | None:
    """Take a connection slot of ``service``: its plan's connection limit first (limits.py), then its
    descriptors in the node's budget (capacity.py), both before any upstream descriptor is spent. None
    when taken; else nothing is held and the refusal's category: "limit" or "capacity".

    A sub-user's derived entry (gateway/subusers.py) takes a slot of its service (the service's limit
    holds for the sum of its own login and its sub-users) and one of its own (the sub-user's limit)."""
    sid = service.service_id
    parent = service.parent
    if parent is not None and not _acquire(ctx, parent.service_id, parent.max_connections):
        return "limit"
    if not _acquire(ctx, sid, service.max_connections):
        if parent is not None:
            ctx.limiter.release(parent.service_id)
        return "limit"
    if not ctx.capacity.acquire(sid):
        ctx.limiter.release(sid)
        if parent is not None:
            ctx.limiter.release(parent.service_id)
        return "capacity"
    return None


def _acquire(ctx: Context, service_id: str, limit: int) -> bool:
    """A limiter slot; at the limit, the slots the decision cache holds unused come back first
    (fastpath.FastPath.reclaim), so the limit counts open connections only."""
    return ctx.limiter.acquire(service_id, limit) or (
        ctx.reclaim is not None and ctx.reclaim(service_id) and ctx.limiter.acquire(service_id, limit))


def release_slot(ctx: Context, service_id: str) -> None:
    """Give back what ``take_slot`` took (a sub-user's metering id: its service's slot too)."""
    ctx.limiter.release(service_id)
    ctx.capacity.release(service_id)
    if "/" in service_id:
        ctx.limiter.release(service_id.partition("/")[0])


def slot_refusal(ctx: Context, reason: str, service_id: str) -> bytes:
    """The HTTP reply to a refused slot: 429 for the plan's limit, 503 with the reason for capacity."""
    if reason == "limit":
        whose = "sub-user" if "/" in service_id else "service"
        return build_reply(429, f"too many concurrent connections for this {whose}")
    return build_reply(503, ctx.capacity.reason(service_id))
