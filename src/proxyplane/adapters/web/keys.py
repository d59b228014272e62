"""API keys page: create (one key per sent form, secret shown once after a redirect, MCP setup next to it),
list with spending caps, revoke. Scopes come with what they allow and a few presets; caps are in dollars
(issues 22.5 and 22.10)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import (
    WebRoute,
    call,
    form,
    platform_of,
    redirect,
    render,
    require_login,
)
from proxyplane.adapters.web.forms import (
    ALREADY_SENT,
    forget_reveal,
    form_key,
    new_token,
    reveal,
    take_reveal,
)
from proxyplane.adapters.web.money_pages import as_list, dollars_to_cents
from proxyplane.core.errors import DomainError
from proxyplane.core.scopes import Scope
from proxyplane.domains.apikeys.ops import ApiKeyCreated
from proxyplane.domains.oauth.service import GRANT_KEY_PREFIX

router = APIRouter(route_class=WebRoute, include_in_schema=False)
FORM = "create_api_key"
MCP_PATH = "/api/v1/mcp"  # adapters/mcp/server.py MCP_PATH (not imported: the MCP SDK stays out of pages)

SCOPE_HELP = {
    Scope.catalog_read: "see products, prices, countries and stock",
    Scope.services_read: "list services, endpoints, credentials and unpaid orders",
    Scope.services_write: "change services: whitelist, password, session mode, renewal, cancellation",
    Scope.usage_read: "traffic, requests and errors of services",
    Scope.wallet_read: "balance, ledger and invoices",
    Scope.wallet_deposit: "start top-ups (returns a checkout link; moves no money by itself)",
    Scope.wallet_spend: "pay from the wallet: orders, renewals, add-ons, more IPs",
    Scope.tickets_read: "read support tickets",
    Scope.tickets_write: "open and answer support tickets",
    Scope.customer_read: "read the profile and login history",
    Scope.customer_write: "change the profile and billing details",
    Scope.webhooks: "manage webhook endpoints and deliveries",
}
READS = [s for s in Scope if s.value.endswith(":read")]
PRESETS: dict[str, tuple[str, list[Scope]]] = {
    "read_only": ("Read only: sees everything, changes nothing", READS),
    "proxy_manager": (
        "Proxy manager: runs existing services, spends nothing",
        [Scope.catalog_read, Scope.services_read, Scope.services_write, Scope.usage_read],
    ),
    "buyer": (
        "Buyer (e.g. an AI agent): also orders and pays from the wallet; set a spending cap",
        [*READS, Scope.services_write, Scope.wallet_spend],
    ),
    "all": ("Everything", list(Scope)),
}
CAPS = {"spend_limit_daily": "spend_limit_daily_cents", "spend_limit_total": "spend_limit_total_cents"}


async def _keys(
    request: Request,
    status: int = 200,
    errors: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
) -> Response:
    keys = await call(request, "list_api_keys")
    created = take_reveal(request, FORM, ApiKeyCreated)
    grants = (await call(request, "web_oauth_grants")).root  # OAuth clients (issue 21.2)
    response = render(
        request,
        "keys.html",
        status=status,
        keys=[k for k in keys.root if k.prefix != GRANT_KEY_PREFIX],  # OAuth grants: listed apart
        grants=grants,
        scopes=[(s.value, SCOPE_HELP.get(s, "")) for s in Scope],
        presets={k: label for k, (label, _) in PRESETS.items()},
        created=created,
        mcp_url=platform_of(request).settings.base_url() + MCP_PATH,
        form_token=new_token(),
        values=values or {},
        errors=errors or {},
    )
    return forget_reveal(request, response)


@router.get("/keys")
async def keys(request: Request) -> Response:
    await require_login(request)
    return await _keys(request)


def key_body(data: dict[str, Any]) -> dict[str, Any] | str:
    """The create_api_key input from the form, or what is wrong with the form."""
    scopes = as_list(data.get("scopes"))
    preset = PRESETS.get(str(data.get("preset", "")))
    if preset is not None:
        scopes = sorted({*scopes, *(s.value for s in preset[1])})
    if not scopes:
        return "Choose a preset or at least one scope."
    body: dict[str, Any] = {"name": str(data.get("name", "")).strip(), "scopes": scopes}
    for field, target in CAPS.items():
        raw = str(data.get(field, "") or "").strip()
        if raw:
            cents = dollars_to_cents(raw)
            if cents < 0:
                return "Spending caps are amounts in dollars, e.g. 25 or 12.50."
            body[target] = cents
    if data.get("confirm_spending"):  # every spend confirmed by the person over MCP (issue 21.3)
        body["confirm_spending"] = True
    return body


@router.post("/keys")
async def create_key(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body = key_body(data)
    if isinstance(body, str):
        return await _keys(request, 422, {"create": body}, data)
    try:
        created = await call(request, "create_api_key", body, form_key(data))
    except ALREADY_SENT:
        return redirect(request, "/keys", "That form was already sent: the key exists once (see the list).")
    except DomainError as exc:
        return await _keys(request, exc.http_status, {"create": exc.message}, data)
    response = redirect(request, "/keys#new-key", f"Key “{created.name}” created.")
    reveal(request, response, FORM, created)
    return response


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request) -> Response:
    await require_login(request)
    await form(request)
    try:
        result = await call(request, "revoke_api_key", {"key_id": request.path_params["key_id"]})
    except DomainError as exc:
        return await _keys(request, exc.http_status, {"list": exc.message})
    return redirect(request, "/keys", result.message)
