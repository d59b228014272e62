"""The service page's traffic actions (issue 32): buy GB for a metered service at the rate the page showed
(add_traffic with max_total_cents = GB x that rate, so a changed rate charges nothing and re-renders the
page), the auto top-up (set_auto_topup), the limit of client addresses (set_client_ip_limit, 32.5) and
the speed limit (set_speed_limit, 32.6, typed in kB/s). Each is the REST operation run through `invoke`;
a refusal re-renders the page with the message in its section."""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, form, money, redirect, require_login
from proxyplane.adapters.web.services import action, service_id, service_page

router = APIRouter(route_class=WebRoute, include_in_schema=False)
SECTION = "traffic"


def whole(value: object) -> int | None:
    text = str(value if value is not None else "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else None


@router.post("/services/{service_id}/traffic")
async def add_traffic(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    gb, rate = whole(data.get("gb")), whole(data.get("rate_cents"))
    if gb is None or gb < 1:
        return await service_page(request, 422, {SECTION: "Enter a whole number of GB, 1 or more."})
    if rate is None:
        return await service_page(request, 422, {SECTION: "Reload the page to see the current price."})
    body = {
        "gb": gb,
        "max_total_cents": gb * rate,
        "idempotency_key": str(data.get("idempotency_key", "")) or uuid.uuid4().hex,
    }
    result = await action(request, "add_traffic", body, SECTION)
    if isinstance(result, Response):
        return result
    done = f"{gb} GB added; {money(result.charged_cents)} charged to your wallet."
    return redirect(request, f"/services/{service_id(request)}#plan-use", done)


@router.post("/services/{service_id}/traffic/auto-top-up")
async def auto_topup(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    enabled = data.get("enabled") in ("on", "true", "1")
    body: dict[str, object] = {"enabled": enabled}
    for name in ("threshold_pct", "gb", "max_per_period"):
        value = whole(data.get(name))
        if value is None and enabled:
            message = f"{name.replace('_', ' ')}: enter a whole number."
            return await service_page(request, 422, {SECTION: message})
        if value is not None:
            body[name] = value
    result = await action(request, "set_auto_topup", body, SECTION)
    if isinstance(result, Response):
        return result
    auto = result.auto_topup
    done = (
        f"Auto top-up on: {auto.gb} GB at {auto.threshold_pct} % used, at most {auto.max_per_period}"
        " a period."
        if auto is not None
        else "Auto top-up off."
    )
    return redirect(request, f"/services/{service_id(request)}#plan-use", done)


@router.post("/services/{service_id}/client-ips")
async def client_ips(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    raw = str(data.get("max_client_ips", "")).strip()
    most = whole(raw)
    if raw and most is None:
        return await service_page(request, 422, {"client-ips": "Enter a whole number, or leave it empty."})
    body = {"max_client_ips": most, "policy": str(data.get("policy", "refuse_new"))}
    result = await action(request, "set_client_ip_limit", body, "client-ips")
    if isinstance(result, Response):
        return result
    done = (
        f"At most {result.max_client_ips} client addresses ({result.policy.replace('_', ' ')})."
        if result.max_client_ips
        else "No limit on client addresses."
    )
    return redirect(request, f"/services/{service_id(request)}#client-ips", done)


@router.post("/services/{service_id}/speed-limit")
async def speed_limit(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    raw = str(data.get("kbps", "")).strip()
    kbps = whole(raw)
    if raw and kbps is None:
        return await service_page(request, 422, {"speed": "Enter a whole number of kB/s, or leave it empty."})
    body = {"bytes_per_second": None if kbps is None else kbps * 1000}
    result = await action(request, "set_speed_limit", body, "speed")
    if isinstance(result, Response):
        return result
    rate = result.bytes_per_second
    done = f"Speed limit: {rate // 1000} kB/s." if rate else "No speed limit."
    return redirect(request, f"/services/{service_id(request)}#client-ips", done)
