"""OAuth consent and token pages (issue 21.2): the signed-in customer answers an MCP client's
authorization request (scopes as for API keys, optional spending caps, "confirm every spend"), and sees
and revokes the granted clients on the API keys page.

Not signed in, the consent page sends the customer to sign in first and back (`/login?next=`)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from proxyplane.adapters.web.base import WebRoute, call, form, platform_of, redirect, render, require_login
from proxyplane.adapters.web.keys import PRESETS, SCOPE_HELP, key_body
from proxyplane.core.errors import NotFound
from proxyplane.core.scopes import Scope

router = APIRouter(route_class=WebRoute, include_in_schema=False)
CONSENT_PATH = "/oauth/consent"


def _request_id(raw: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(raw))
    except ValueError:
        raise NotFound("this authorization request is unknown; start again from the app") from None


async def _page(request: Request, request_id: uuid.UUID, status: int = 200, error: str = "") -> Response:
    pending = await call(request, "web_oauth_request", {"request_id": request_id})
    requested = set(pending.scopes)
    return render(
        request,
        "consent.html",
        status=status,
        request_id=request_id,
        client_name=pending.client_name,
        client_id=pending.client_id,
        redirect_host=urlsplit(pending.redirect_uri).netloc or pending.redirect_uri,
        client_host=urlsplit(pending.client_id).netloc if "://" in pending.client_id else "",
        scopes=[(s.value, SCOPE_HELP.get(s, ""), s.value in requested) for s in Scope],
        presets={k: label for k, (label, _) in PRESETS.items()},
        errors={"consent": error} if error else {},
    )


@router.get(CONSENT_PATH)
async def consent(request: Request) -> Response:
    await require_login(request)
    return await _page(request, _request_id(request.query_params.get("request")))


def _back_to_client(redirect_uri: str, params: dict[str, str | None]) -> RedirectResponse:
    parts = urlsplit(redirect_uri)
    query = parse_qsl(parts.query) + [(k, v) for k, v in params.items() if v is not None]
    target = urlunsplit(parts._replace(query=urlencode(query)))
    return RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})


@router.post(CONSENT_PATH)
async def answer(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    request_id = _request_id(data.get("request"))
    issuer = platform_of(request).settings.base_url()
    if data.get("action") != "allow":
        row = await call(request, "web_oauth_deny", {"request_id": request_id})
        params = {"error": "access_denied", "error_description": "the customer declined", "state": row.state}
        return _back_to_client(row.redirect_uri, {**params, "iss": issuer})
    body = key_body({**data, "name": "oauth"})
    if isinstance(body, str):
        return await _page(request, request_id, 422, body)
    approval = {
        "request_id": request_id,
        "scopes": sorted(body["scopes"]),
        "spend_limit_daily_cents": body.get("spend_limit_daily_cents"),
        "spend_limit_total_cents": body.get("spend_limit_total_cents"),
        "confirm_spending": bool(data.get("confirm_spending")),
    }
    row = await call(request, "web_oauth_approve", approval)
    return _back_to_client(row.redirect_uri, {"code": row.code, "state": row.state, "iss": issuer})


@router.post("/oauth/grants/{grant_id}/revoke")
async def revoke(request: Request) -> Response:
    await require_login(request)
    await form(request)
    grant_id = _request_id(request.path_params["grant_id"])
    grant = await call(request, "web_oauth_revoke_grant", {"grant_id": grant_id})
    return redirect(
        request, "/keys", f"Access of “{grant.client_name}” revoked: its tokens stop working at once."
    )
