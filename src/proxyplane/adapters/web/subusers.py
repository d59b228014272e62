"""Service page: sub-users (issue 18). Create (the password is shown once, carried to the page by the
reveal cookie like a rotated service password), enable / disable, new password, delete; each sub-user's
usage in the page's window. Every action is the sub-user REST operation run through `invoke`."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, form, redirect, require_login
from proxyplane.adapters.web.forms import reveal
from proxyplane.adapters.web.services import action, service_id, service_page
from proxyplane.adapters.web.subuser_view import revealed_key
from proxyplane.core.units import parse_amount

router = APIRouter(route_class=WebRoute, include_in_schema=False)


def _limits(data: dict[str, Any]) -> dict[str, Any] | str:
    """Create form fields -> operation input (a message when a number is not one). The traffic limit is
    a decimal amount of MB or GB (core/units.py: 1 GB = 10**9 bytes)."""
    body: dict[str, Any] = {}
    for field in ("login", "name"):
        value = str(data.get(field, "")).strip()
        if value:
            body[field] = value
    traffic = str(data.get("traffic_limit", "")).strip()
    if traffic:
        try:
            body["traffic_limit_bytes"] = parse_amount(traffic, str(data.get("traffic_unit", "GB")))
        except ValueError as exc:
            return f"traffic limit: {exc}"
    for name in ("traffic_limit_requests", "max_connections", "max_client_ips"):
        raw = str(data.get(name, "")).strip()
        if not raw:
            continue
        try:
            body[name] = int(raw)
        except ValueError:
            return f"{name.replace('_', ' ')} must be a whole number"
    speed = str(data.get("speed_kbps", "")).strip()
    if speed:  # typed in kB/s (decimal), as the service's own speed field (issue 32.6)
        try:
            body["speed_limit_bps"] = int(speed) * 1000
        except ValueError:
            return "speed limit must be a whole number of kB/s"
    policy = str(data.get("client_ip_policy", "")).strip()
    if policy:
        body["client_ip_policy"] = policy
    countries = [c.strip() for c in str(data.get("countries", "")).replace(";", ",").split(",") if c.strip()]
    if countries:
        body["countries"] = countries
    return body


def _own_limits(data: dict[str, Any]) -> dict[str, Any] | str:
    """The row's limits form -> update_subuser input: every field present, an empty one clears that
    limit (None), as the service's own client-address and speed fields do (issue 32.5/32.6)."""
    body: dict[str, Any] = {"client_ip_policy": str(data.get("client_ip_policy", "refuse_new"))}
    for name, label, scale in (
        ("max_client_ips", "client addresses", 1),
        ("speed_kbps", "speed limit", 1000),
    ):
        raw = str(data.get(name, "")).strip()
        try:
            value = int(raw) * scale if raw else None
        except ValueError:
            return f"{label}: enter a whole number, or leave it empty"
        body["speed_limit_bps" if name == "speed_kbps" else name] = value
    return body


@router.post("/services/{service_id}/subusers")
async def create(request: Request) -> Response:
    await require_login(request)
    body = _limits(await form(request))
    if isinstance(body, str):
        return await service_page(request, 422, {"subusers": body})
    result = await action(request, "create_subuser", body, "subusers")
    if isinstance(result, Response):
        return result
    sid = service_id(request)
    response = redirect(request, f"/services/{sid}#subusers", f"Sub-user {result.login} created.")
    reveal(request, response, revealed_key(sid), result)  # the password, shown once
    return response


@router.post("/services/{service_id}/subusers/{subuser_id}")
async def change(request: Request) -> Response:
    """One form per action: enable, disable, rename, limits (client addresses, policy, speed), password
    (a new one, shown once), delete."""
    await require_login(request)
    data = await form(request)
    try:
        ref = {"subuser_id": str(uuid.UUID(request.path_params["subuser_id"]))}
    except ValueError:
        return await service_page(request, 404, {"subusers": "No such sub-user."})
    do = str(data.get("do", ""))
    if do in ("enable", "disable"):
        result = await action(request, "update_subuser", {**ref, "enabled": do == "enable"}, "subusers")
        message = f"Sub-user {getattr(result, 'login', '')} {do}d."
    elif do == "rename":
        name = str(data.get("name", "")).strip()
        result = await action(request, "update_subuser", {**ref, "name": name}, "subusers")
        login = getattr(result, "login", "")
        message = (
            f"Sub-user {login} is now called “{name}”." if name else f"Sub-user {login} has no name now."
        )
    elif do == "limits":
        limits = _own_limits(data)
        if isinstance(limits, str):
            return await service_page(request, 422, {"subusers": limits})
        result = await action(request, "update_subuser", {**ref, **limits}, "subusers")
        message = f"Limits of sub-user {getattr(result, 'login', '')} saved."
    elif do == "password":
        result = await action(request, "rotate_subuser_password", ref, "subusers")
    elif do == "delete":
        result = await action(request, "delete_subuser", ref, "subusers")
        message = "Sub-user deleted."
    else:
        return await service_page(request, 422, {"subusers": "Unknown action."})
    if isinstance(result, Response):
        return result
    sid = service_id(request)
    if do == "password":
        response = redirect(request, f"/services/{sid}#subusers", f"New password for {result.login}.")
        reveal(request, response, revealed_key(sid), result)
        return response
    return redirect(request, f"/services/{sid}#subusers", message)
