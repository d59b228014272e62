"""Service page actions beyond the basics: add IPs (quote, then confirm), IP refresh (free or paid, shown
before confirming), add-ons (buy at the shown price, cancel), sticky sessions of a rotating service (rotate,
delete, purge, TTL, session mode). Each is the REST operation run through `invoke`; a refusal re-renders
the service page with the message in the section that caused it."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, form, money, redirect, require_login
from proxyplane.adapters.web.services import action, service_id, service_page

router = APIRouter(route_class=WebRoute, include_in_schema=False)
COUNTRY = re.compile(r"^[A-Z]{2}$")


def back(request: Request, anchor: str) -> str:
    return f"/services/{service_id(request)}#{anchor}"


def segments_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    country = str(data.get("country", "")).strip().upper()
    try:
        count = int(str(data.get("count", "")).strip())
    except ValueError:
        count = 0
    return [{"country": country, "count": count}] if COUNTRY.match(country) and count > 0 else []


@router.post("/services/{service_id}/add-ips/quote")
async def add_ips_quote(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    segments = segments_of(data)
    if not segments:
        return await service_page(request, 422, {"add-ips": "Choose a country and how many IPs to add."})
    quote = await action(request, "quote_add_ips", {"segments": segments}, "add-ips")
    if isinstance(quote, Response):
        return quote
    if quote.errors:
        message = "; ".join(str(e.get("message", e)) for e in quote.errors)
        return await service_page(request, 409, {"add-ips": message})
    return await service_page(request, add_quote=quote, add_segments=segments[0])


@router.post("/services/{service_id}/add-ips")
async def add_ips(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    segments = segments_of(data)
    if not segments:
        return await service_page(request, 422, {"add-ips": "Choose a country and how many IPs to add."})
    key = str(data.get("idempotency_key", "")) or uuid.uuid4().hex
    result = await action(request, "add_ips", {"segments": segments, "idempotency_key": key}, "add-ips")
    if isinstance(result, Response):
        return result
    done = f"{result.added_ip_count} IPs added; {money(result.charged_cents)} charged to your wallet."
    return redirect(request, back(request, "endpoints"), done)


@router.post("/services/{service_id}/refresh")
async def refresh(request: Request) -> Response:
    """Refresh every IP at the price the page showed; a changed price (e.g. the free refresh was used
    meanwhile) re-renders the page with the new terms instead of charging."""
    await require_login(request)
    data = await form(request)
    status = await action(request, "get_refresh_status", {}, "refresh")
    if isinstance(status, Response):
        return status
    price = 0 if status.free else status.full_refresh_price_cents
    if str(price) != str(data.get("expected_cents", "")):
        message = f"The refresh price changed: it is now {money(price)}. Check and confirm again."
        return await service_page(request, 409, {"refresh": message})
    key = str(data.get("idempotency_key", "")) or uuid.uuid4().hex
    result = await action(request, "refresh_ips", {"idempotency_key": key}, "refresh")
    if isinstance(result, Response):
        return result
    kind = "free" if result.refresh == "free" else f"{money(result.charged_cents)} charged"
    return redirect(request, back(request, "endpoints"), f"{len(result.replaced)} IPs replaced ({kind}).")


@router.post("/services/{service_id}/addons")
async def buy_addon(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        # the form's price guard; a page loaded before issue 30.7 still posts expected_price_cents
        expected = int(str(data.get("max_total_cents", data.get("expected_price_cents", ""))))
    except ValueError:
        return await service_page(request, 422, {"addons": "Reload the page to see the current price."})
    body = {
        "addon_type": str(data.get("addon_type", "")),
        "quantity": 1,
        "max_total_cents": expected,
        "idempotency_key": str(data.get("idempotency_key", "")) or uuid.uuid4().hex,
    }
    result = await action(request, "buy_addon", body, "addons")
    if isinstance(result, Response):
        return result
    done = (
        f"Add-on {result.addon.addon_type.replace('_', ' ')} active; {money(result.charged_cents)} charged."
    )
    return redirect(request, back(request, "addons"), done)


@router.post("/services/{service_id}/addons/{addon_id}/cancel")
async def cancel_addon(request: Request) -> Response:
    await require_login(request)
    await form(request)
    try:
        addon_id = str(uuid.UUID(request.path_params["addon_id"]))
    except ValueError:
        return await service_page(request, 404, {"addons": "No such add-on."})
    result = await action(request, "cancel_addon", {"addon_id": addon_id}, "addons")
    if isinstance(result, Response):
        return result
    done = f"Add-on cancelled; {money(result.refunded_cents)} refunded to your wallet."
    return redirect(request, back(request, "addons"), done)


@router.post("/services/{service_id}/sticky")
async def sticky(request: Request) -> Response:
    """One form per sticky action: rotate / delete one session, purge all, set the TTL or the mode."""
    await require_login(request)
    data = await form(request)
    do = str(data.get("do", ""))
    sid = str(data.get("sid", ""))
    subuser = str(data.get("subuser_id", "")).strip()  # a sub-user's session (issue 18)
    ref = {"sid": sid, "subuser_id": subuser} if subuser else {"sid": sid}
    if do == "rotate":
        name = "rotate_subuser_sticky_session" if subuser else "rotate_sticky_session"
        result = await action(request, name, ref, "sticky")
        message = f"Session {sid} now exits from {getattr(result, 'exit_ip', '')}."
    elif do == "delete":
        result = await action(request, "delete_sticky_session", ref, "sticky")
        message = f"Session {sid} ended."
    elif do == "purge":
        result = await action(request, "purge_sticky_sessions", {}, "sticky")
        message = f"{getattr(result, 'purged', 0)} sessions ended."
    elif do == "ttl":
        result = await action(
            request, "set_sticky_ttl", {"ttl_minutes": data.get("ttl_minutes", "")}, "sticky"
        )
        message = f"Sticky sessions now last {getattr(result, 'ttl_minutes', '')} minutes."
    elif do == "mode":
        body = {"mode": str(data.get("mode", "")), "pin": str(data.get("pin", "")).strip() or None}
        result = await action(request, "set_sticky_mode", body, "sticky")
        message = f"Session mode: {getattr(result, 'mode', '')}."
    else:
        return await service_page(request, 422, {"sticky": "Unknown action."})
    if isinstance(result, Response):
        return result
    return redirect(request, back(request, "sticky"), message)
