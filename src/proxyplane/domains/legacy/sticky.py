"""Sticky sessions of rotating (ppr) services, stats and rate: the same domain functions as the v1
sticky and usage operations (domains/proxy, domains/usage).

Session item: {"session": sid, "server": gateway host, "ip": exit IP, "started_at", "expires_at"}
(YYYY-MM-DD HH:MM:SS, UTC). The `server` path segment of rotate must be the service's gateway host
(sessions are shared by every gateway node through the store, so that is the only server name)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import DomainError
from proxyplane.core.rotating_gateway import rotating_gateway
from proxyplane.core.scopes import Scope
from proxyplane.core.units import MB  # decimal, as everywhere (core/units.py)
from proxyplane.domains.legacy.handlers import owned_service
from proxyplane.domains.legacy.wire import Money, fail, legacy_get, timestamp
from proxyplane.domains.proxy import service as proxy
from proxyplane.domains.quotas import service as quotas
from proxyplane.domains.services import service as services
from proxyplane.domains.services.ops import emit_changed
from proxyplane.domains.usage import service as usage
from proxyplane.ops import Context, Effect, Operation
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway import StickySession

STATS_DAYS = 30


class StickyRef(BaseModel):
    id: str
    server: str = ""
    session: str = ""
    ttl: str = ""


def _host(svc: Service) -> str:
    return rotating_gateway().host  # the configured gateway, never a copy stored with the product


def _item(svc: Service, row: StickySession) -> dict[str, Any]:
    return {
        "session": row.sid,
        "server": _host(svc),
        "ip": row.exit_ip,
        "started_at": timestamp(row.started_at),
        "expires_at": timestamp(row.expires_at),
    }


def _live_ppr(svc: Service) -> bool:
    return proxy.is_rotating(svc) and services.is_served(svc)


async def _service(ctx: Context, raw: str, message: str) -> Service:
    try:
        return await owned_service(ctx, raw, message)
    except DomainError:
        raise fail(message) from None


async def sticky_list(ctx: Context, ref: StickyRef) -> list[dict[str, Any]]:
    svc = await _service(ctx, ref.id, f"Unprocessable Entity. Service {ref.id[:20]} not found")
    if not _live_ppr(svc):
        return []
    return [_item(svc, row) for row in await proxy.live_sessions(ctx.session, svc)]


async def sticky_rotate(ctx: Context, ref: StickyRef) -> dict[str, Any]:
    svc = await owned_service(ctx, ref.id)
    if not _live_ppr(svc) or ref.server != _host(svc):
        raise fail()
    try:
        row = await proxy.rotate_session(ctx.session, svc, ref.session)
    except DomainError:
        raise fail() from None
    emit_changed(ctx, svc.service_id)
    return _item(svc, row)


async def sticky_ttl(ctx: Context, ref: StickyRef) -> dict[str, Any] | None:
    """None: the empty body (service not active or not ppr)."""
    svc = await owned_service(ctx, ref.id)
    if not ref.ttl.isdigit() or int(ref.ttl) not in proxy.TTL_MINUTES:
        raise fail()
    if not _live_ppr(svc):
        return None
    row = await proxy.set_ttl(ctx.session, svc, int(ref.ttl))
    emit_changed(ctx, svc.service_id)
    return {"ttl": row.sticky_ttl_seconds // 60}


async def sticky_reset(ctx: Context, ref: StickyRef) -> dict[str, Any] | list[Any]:
    svc = await owned_service(ctx, ref.id)
    if not _live_ppr(svc):
        return []
    ended = await proxy.purge_sessions(ctx.session, svc)
    emit_changed(ctx, svc.service_id)
    return {"reset": ended}


def _plan(svc: Service) -> tuple[str, int]:
    """('requests', quota) or ('bandwidth', quota in MB) of a rotating service."""
    params = svc.parameters or {}
    if params.get("plan") == "bandwidth":
        return "bandwidth", int(params.get("quota_bytes", 0)) // MB
    return "requests", int(params.get("quota_requests", 0))


def _amount(plan: str, requests: int, bytes_total: int) -> Any:
    """Requests as an integer; traffic in MB with two decimals."""
    return requests if plan == "requests" else Money(round(bytes_total * 100 / MB))


async def stats(ctx: Context, ref: StickyRef) -> list[dict[str, Any]]:
    """Per UTC day of the last 30 days with traffic: requests, or MB for a bandwidth plan."""
    svc = await owned_service(ctx, ref.id)
    if not proxy.is_rotating(svc):
        raise fail()
    plan, _ = _plan(svc)
    end = utcnow()
    start = (end - timedelta(days=STATS_DAYS - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    days: dict[str, list[int]] = {}
    # per UTC day from the daily rollups (start is a UTC midnight, so each point is one whole day)
    for at, t in await usage.series(ctx.session, svc.service_id, start, end, "day"):
        day = days.setdefault(at.strftime("%Y-%m-%d"), [0, 0])
        day[0] += t.requests
        day[1] += t.bytes_up + t.bytes_down
    return [{"date": d, "rate": _amount(plan, r, b)} for d, (r, b) in sorted(days.items())]


async def rate(ctx: Context, ref: StickyRef) -> list[dict[str, Any]]:
    """The plan's quota and what the current period used (requests, or MB): for a metered service
    (issue 32) the enforced quota's period (term, month or none) and limit (traffic bought included), as
    get_service_quota reads it; else the term's usage against the plan's quota."""
    svc = await owned_service(ctx, ref.id)
    if not proxy.is_rotating(svc):
        raise fail()
    if svc.current_period_start is None:
        return []
    plan, limit = _plan(svc)
    metered = await quotas.usage(ctx.session, svc)
    if metered is not None:
        if plan == "bandwidth" and metered.limit_bytes is not None:
            return [{"limit": metered.limit_bytes // MB, "rate": _amount(plan, 0, metered.used_bytes)}]
        if plan == "requests" and metered.quota_requests is not None:
            return [{"limit": metered.quota_requests, "rate": metered.used_requests}]
    t = await usage.totals(
        ctx.session, svc.service_id, svc.current_period_start, utcnow() + timedelta(minutes=1)
    )
    return [{"limit": limit, "rate": _amount(plan, t.requests, t.bytes_up + t.bytes_down)}]


def _op(name: str, handler: Any, scopes: set[str], effect: Effect = Effect.READ) -> Operation:
    return legacy_get(name, handler, StickyRef, scopes, effect)


LIST = _op("sticky_list", sticky_list, {Scope.services_read})
ROTATE = _op("sticky_rotate", sticky_rotate, {Scope.services_write}, Effect.WRITE)
TTL = _op("sticky_changettl", sticky_ttl, {Scope.services_write}, Effect.WRITE)
RESET = _op("sticky_resetall", sticky_reset, {Scope.services_write}, Effect.WRITE)
STATS = _op("stats", stats, {Scope.usage_read})
RATE = _op("rate", rate, {Scope.usage_read})
