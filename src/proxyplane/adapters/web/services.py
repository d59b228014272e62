"""Services list and service page: endpoints (copy, download), credentials, whitelist, renew, auto-renew,
cancel, usage chart. Every action is the service's REST operation run through `invoke`."""

from __future__ import annotations

import csv
import io
import json
import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, money, redirect, render, require_login
from proxyplane.adapters.web.charts import WINDOWS, usage_chart
from proxyplane.adapters.web.forms import forget_reveal, reveal, take_reveal
from proxyplane.adapters.web.money_pages import int_param, unpaid_orders
from proxyplane.adapters.web.rotating import rotating_view
from proxyplane.adapters.web.service_extras import extras, optional
from proxyplane.adapters.web.subuser_view import new_subuser, subusers_view
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import DomainError, NotFound
from proxyplane.domains.proxy.ops import CredentialsOut

router = APIRouter(route_class=WebRoute, include_in_schema=False)
LINE_FORMATS = {
    "ip_port": "ip:port",
    "ip_port_login_password": "ip:port:login:password",
    "login_password_at_ip_port": "login:password@ip:port",
}
PROTOCOLS = ("http", "socks5")


def endpoint_line(address: str, login: str, password: str, fmt: str) -> str:
    if fmt == "ip_port_login_password":
        return f"{address}:{login}:{password}"
    if fmt == "login_password_at_ip_port":
        return f"{login}:{password}@{address}"
    return address


def service_id(request: Request) -> str:
    raw = request.path_params["service_id"]
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise NotFound("service not found") from None


@router.get("/services")
async def services(request: Request) -> Response:
    await require_login(request)
    offset = int_param(request, "offset")
    page = await call(request, "list_services", {"offset": offset, "limit": 25})
    return render(request, "services.html", page=page)


async def service_page(
    request: Request, status: int = 200, errors: dict[str, str] | None = None, **extra: Any
) -> Response:
    sid = service_id(request)
    ref = {"service_id": sid}
    svc = await call(request, "get_service", ref)
    window = request.query_params.get("window", "24h")
    window = window if window in WINDOWS else "24h"
    bars = WINDOWS[window]
    start, end = bars.bounds(utcnow())  # aligned on the bars' UTC boundaries: tiles and bars agree
    span = {"service_id": sid, "start": start.isoformat(), "end": end.isoformat()}
    series = await optional(request, "get_usage_series", {**span, "resolution": bars.resolution})
    pending = svc.status == "pending"  # an order not paid yet: no endpoints to show (issue 22.1)
    config = None if pending else await optional(request, "get_proxy_config", ref)
    rotating: dict[str, Any] = {"plan_use": None, "proxy_lines": []}
    if svc.product_kind == "proxy_rotating" and not pending:
        rotating = await rotating_view(request, svc, config)
    endpoints = None if pending else await optional(request, "get_proxy_ips", ref)
    return render(
        request,
        "service.html",
        status=status,
        svc=svc,
        unpaid=await this_unpaid(request, svc.service_id) if pending else None,
        endpoints=endpoints,
        config=config,
        **rotating,
        whitelist=await optional(request, "get_proxy_whitelist", ref),
        client_ip_limit=None if pending else await optional(request, "get_client_ip_limit", ref),
        speed_limit=None if pending else await optional(request, "get_speed_limit", ref),
        usage=await optional(request, "get_service_usage", span),
        chart=usage_chart(series.points if series else [], start, end, bars.bar),
        window=window,
        windows=list(WINDOWS),
        formats=LINE_FORMATS,
        protocols=PROTOCOLS,
        idempotency_key=uuid.uuid4().hex,
        errors=errors or {},
        **await extras(request, svc, span),
        **await subusers_view(request, svc, span, config, endpoints),  # issue 18
        **extra,
    )


async def this_unpaid(request: Request, sid: uuid.UUID) -> dict[str, list[Any]]:
    """The service's own entry of the unpaid orders (none: its checkout is no longer open)."""
    listing = await unpaid_orders(request)
    return {"items": [o for o in (listing.items if listing else []) if o.service_id == sid]}


@router.get("/services/{service_id}")
async def service(request: Request) -> Response:
    await require_login(request)
    sid = service_id(request)
    rotated = take_reveal(request, f"rotated:{sid}", CredentialsOut)
    page = await service_page(
        request, revealed=rotated, rotated=rotated is not None, new_subuser=new_subuser(request, sid)
    )
    return forget_reveal(request, page)


async def action(request: Request, name: str, data: dict[str, Any], section: str) -> Any:
    """Run one service operation; on a domain error re-render the page with the message in `section`."""
    try:
        return await call(request, name, {"service_id": service_id(request), **data})
    except DomainError as exc:
        return await service_page(request, exc.http_status, {section: exc.message})


@router.post("/services/{service_id}/credentials")
async def credentials(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    if data.get("do") == "reveal":
        result = await action(request, "get_proxy_auth", {"reveal": True}, "credentials")
        if isinstance(result, Response):
            return result
        return await service_page(request, revealed=result)
    result = await action(
        request,
        "update_proxy_auth",
        {"rotate_password": True, "rotation_key": str(data.get("rotation_key", "")) or uuid.uuid4().hex},
        "credentials",
    )
    if isinstance(result, Response):
        return result
    response = redirect(request, f"/services/{service_id(request)}#credentials")
    reveal(request, response, f"rotated:{service_id(request)}", result)  # the new password, shown once
    return response


@router.post("/services/{service_id}/whitelist")
async def whitelist(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    ip = str(data.get("ip", "")).strip()
    if data.get("do") == "remove":
        result = await action(request, "delete_proxy_whitelist", {"ip_or_cidr": ip}, "whitelist")
        message = f"{ip} removed from the whitelist."
    else:
        result = await action(request, "add_proxy_whitelist", {"ip": ip}, "whitelist")
        message = f"{ip} whitelisted."
    if isinstance(result, Response):
        return result
    return redirect(request, f"/services/{service_id(request)}#whitelist", message)


@router.post("/services/{service_id}/renew")
async def renew(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    result = await action(
        request,
        "renew_service",
        {"period_months": data.get("period_months", "1"), "idempotency_key": data.get("idempotency_key", "")},
        "renew",
    )
    if isinstance(result, Response):
        return result
    charged = result.charged_cents
    return redirect(
        request, f"/services/{service_id(request)}", f"Renewed; {money(charged)} charged to your wallet."
    )


@router.post("/services/{service_id}/auto-renew")
async def auto_renew(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    result = await action(request, "set_auto_renew", {"auto_renew": data.get("auto_renew") == "on"}, "renew")
    if isinstance(result, Response):
        return result
    state = "on" if result.auto_renew else "off"
    return redirect(request, f"/services/{service_id(request)}", f"Auto-renewal is {state}.")


@router.get("/services/{service_id}/cancel")
async def cancel_confirm(request: Request) -> Response:
    await require_login(request)
    ref = {"service_id": service_id(request)}
    svc = await call(request, "get_service", ref)
    preview = await call(request, "preview_cancel", ref)
    return render(request, "cancel.html", svc=svc, preview=preview)


@router.post("/services/{service_id}/cancel")
async def cancel(request: Request) -> Response:
    await require_login(request)
    await form(request)
    result = await action(request, "cancel_service", {}, "cancel")
    if isinstance(result, Response):
        return result
    refund = result.refunded_cents
    done = f"Service cancelled; {money(refund)} refunded to your wallet."
    return redirect(request, f"/services/{service_id(request)}", done)


@router.get("/services/{service_id}/endpoints.{ext}")
async def download(request: Request) -> Response:
    """Endpoints as txt (one line each), csv or json, in the chosen line format and protocol."""
    await require_login(request)
    ext = request.path_params["ext"]
    fmt = request.query_params.get("format", "ip_port")
    protocol = request.query_params.get("protocol", "http")
    if ext not in ("txt", "csv", "json") or fmt not in LINE_FORMATS or protocol not in PROTOCOLS:
        raise NotFound("no such download")
    sid = service_id(request)
    if (await call(request, "get_service", {"service_id": sid})).status == "pending":
        raise NotFound("no endpoints until the order is paid")
    endpoints = await call(request, "get_proxy_ips", {"service_id": sid})
    auth = await call(request, "get_proxy_auth", {"service_id": sid, "reveal": fmt != "ip_port"})
    rows = [
        {"country": e.country, "line": endpoint_line(getattr(e, protocol), auth.login, auth.password, fmt)}
        for e in endpoints.endpoints
    ]
    name = f"proxies-{sid[:8]}-{protocol}.{ext}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"}
    if ext == "json":
        body = json.dumps([r["line"] for r in rows], indent=1)
        return Response(body + "\n", media_type="application/json", headers=headers)
    if ext == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["country", LINE_FORMATS[fmt]])
        writer.writerows([r["country"], r["line"]] for r in rows)
        return Response(buf.getvalue(), media_type="text/csv", headers=headers)
    return Response("".join(r["line"] + "\n" for r in rows), media_type="text/plain", headers=headers)
