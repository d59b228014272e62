"""Dashboard plumbing: templates, the signed-in caller, CSRF-checked forms, operation calls, error pages.

A page action never touches domain code directly: it builds the operation's own input model from the
form and runs it through `proxyplane.ops.invoke`, exactly as the REST route does."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from proxyplane.adapters.web import sessions
from proxyplane.core.errors import DomainError, Forbidden, ValidationFailed
from proxyplane.core.product_names import humanize, product_name
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.core.units import format_bytes
from proxyplane.domains.team import roles
from proxyplane.domains.team import service as team
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, Effect, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer, WebSession
from proxyplane.storage.outage import FULL_RETRY_AFTER_SECONDS, RETRY_AFTER_SECONDS, is_outage, is_store_full

log = logging.getLogger("proxyplane.web")
HERE = Path(__file__).parent
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def money(cents: int | None) -> str:
    if cents is None:
        return ""
    sign = "-" if cents < 0 else ""
    cents = abs(int(cents))
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def when(value: datetime | str | None) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M UTC")


env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
env.filters["money"] = money
env.filters["when"] = when
env.filters["product"] = product_name
env.filters["humanize"] = humanize
env.filters["bytes"] = format_bytes  # the one byte-unit rule (core/units.py: decimal, 1 GB = 10**9)


class LoginRequired(Exception):
    pass


class CsrfFailed(Exception):
    pass


def platform_of(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


def web_session(request: Request) -> WebSession:
    row: WebSession | None = getattr(request.state, "web_session", None)
    if row is None:
        raise LoginRequired()
    return row


async def attach_session(request: Request) -> WebSession | None:
    """Load the browser's session (once per request) and the signed-in customer's email."""
    if hasattr(request.state, "web_session"):
        row: WebSession | None = request.state.web_session
        return row
    platform = platform_of(request)
    row = await sessions.load_session(platform, request)
    request.state.web_session = row
    request.state.email = ""
    request.state.acting = None
    request.state.view_as = row.viewed_by or "" if row is not None else ""
    if row is not None:
        async with platform.db.unit_of_work(write=False) as uow:
            customer = await uow.session.get(Customer, row.customer_id)
            # a team member's browser acts on the account of its membership while it lasts (issue 34.5)
            if customer is not None and row.member_id is not None:
                request.state.acting = await team.acting(uow.session, row.member_id, row.customer_id)
        if customer is None or customer.status != "active":
            request.state.web_session = None
            return None
        request.state.email = customer.email
    return row


# operations on the signed-in PERSON whatever account the browser acts on (issue 34.5): their password,
# sessions, second factor, app passwords, address, sign-in history, OAuth consents and their teams
PERSONAL = frozenset(
    {
        "web_change_password",
        "web_sign_out",
        "web_list_sessions",
        "web_end_session",
        "web_create_app_password",
        "web_revoke_app_password",
        "web_change_email",
        "get_login_history",
        "web_accept_invitation",
        "web_my_accounts",
        "web_switch_account",
    }
)
PERSONAL_PREFIXES = ("web_two_factor_", "web_oauth_")


def personal(name: str) -> bool:
    return name in PERSONAL or name.startswith(PERSONAL_PREFIXES)


def acting_on(request: Request) -> team.Acting | None:
    """The team account this browser acts on (None: the signed-in person's own)."""
    found: team.Acting | None = getattr(request.state, "acting", None)
    return found


async def require_login(request: Request) -> WebSession:
    row = await attach_session(request)
    if row is None:
        raise LoginRequired()
    return row


def caller(request: Request, personal: bool = False) -> Caller:
    """The dashboard's caller: the signed-in person on their own account, or, when the browser acts on a
    team account (and the operation is not `personal`), that account with the member's role's scopes."""
    row = web_session(request)
    ip, agent = sessions.client_ip(request), request.headers.get("user-agent", "")[:300]
    email = getattr(request.state, "email", "")
    acting = acting_on(request)
    if acting is not None and not personal:
        return Caller(
            customer_id=acting.account_id,
            scopes=roles.scopes_of(acting.role),
            client_ip=ip,
            channel="web",
            user_agent=agent,
            role=acting.role,
            actor=email,
            member_id=acting.member_id,
        )
    return Caller(
        customer_id=row.customer_id,
        scopes=ALL_SCOPES,
        client_ip=ip,
        channel="web",
        user_agent=agent,
        actor=email,
    )


def validation_message(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0] if exc.errors() else {"loc": (), "msg": "invalid input"}
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = str(first.get("msg", "invalid input")).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


async def call(
    request: Request, name: str, data: dict[str, Any] | None = None, door_key: str | None = None
) -> Any:
    """Run the named operation for the signed-in customer, through the same path as its REST route
    (`door_key`: a creating form's token, forms.form_key)."""
    op = REGISTRY[name]
    model = None
    if viewing(request):  # an operator's read-only view (issue 33): reads only, secrets masked
        if op.effect != Effect.READ:
            raise Forbidden(READ_ONLY)
        if op.input is not None and "reveal" in op.input.model_fields:
            data = {**(data or {}), "reveal": False}
    if op.input is not None:
        try:
            model = op.input.model_validate(data or {})
        except ValidationError as exc:
            raise ValidationFailed(validation_message(exc)) from None
    return await invoke(platform_of(request), op, caller(request, personal(name)), model, door_key=door_key)


def has_op(name: str) -> bool:
    return name in REGISTRY


def viewing(request: Request) -> str:
    """Who views this dashboard as the customer (an operator's read-only view, issue 33), else ""."""
    return str(getattr(request.state, "view_as", "") or "")


READ_ONLY = "this is an operator's read-only view of the customer's dashboard: nothing can be changed"


async def form(request: Request) -> dict[str, Any]:
    """The posted form after its CSRF token is checked; repeated fields become lists. An operator's
    read-only view sends none (issue 33)."""
    await attach_session(request)
    if viewing(request):
        raise Forbidden(READ_ONLY)
    data = await request.form()
    values: dict[str, Any] = {}
    for key in data:
        items = data.getlist(key)
        values[key] = items if len(items) > 1 or key.endswith("[]") else items[0]
    row = await attach_session(request)
    if not sessions.csrf_ok(platform_of(request), request, str(values.pop("csrf", "")), row):
        raise CsrfFailed()
    return values


def render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    platform = platform_of(request)
    response = HTMLResponse("", status_code=status, headers=SECURITY_HEADERS)
    row: WebSession | None = getattr(request.state, "web_session", None)
    csrf = row.csrf_token if row is not None else sessions.anon_csrf(platform, request, response)
    flash = sessions.take_flash(platform, request)
    if flash is not None:
        response.delete_cookie(sessions.FLASH_COOKIE, path="/")
    body = env.get_template(template).render(
        request=request,
        csrf=csrf,
        flash=flash,
        signed_in=row is not None,
        email=getattr(request.state, "email", ""),
        acting=getattr(request.state, "acting", None),
        view_as=viewing(request),
        path=request.url.path,
        has_op=has_op,
        pages=page_paths(request),
        menu=menu(request) if row is not None else [],
        errors=ctx.pop("errors", {}),
        **ctx,
    )
    response.body = body.encode()
    response.headers["content-length"] = str(len(response.body))
    return response


# the dashboard menu: (path, label, the scopes its page needs to be of use). A team member's browser shows
# only the pages their role can use (issue 34.5; a hidden page still answers 403 naming the scope): Buy
# needs buying (services:write + wallet:spend), API keys making them (customer:write).
MENU = (
    ("/overview", "Overview", frozenset[str]()),
    ("/buy", "Buy", frozenset({"services:write", "wallet:spend"})),
    ("/services", "Services", frozenset({"services:read"})),
    ("/catalog", "Catalog", frozenset({"catalog:read"})),
    ("/wallet", "Wallet", frozenset({"wallet:read"})),
    ("/invoices", "Invoices", frozenset({"wallet:read"})),
    ("/keys", "API keys", frozenset({"customer:write"})),
    ("/webhooks", "Webhooks", frozenset({"webhooks"})),
    ("/tickets", "Support", frozenset({"tickets:read"})),
    ("/team", "Team", frozenset[str]()),
    ("/profile", "Profile", frozenset[str]()),
    ("/security", "Security", frozenset[str]()),
)


def menu(request: Request) -> list[tuple[str, str]]:
    """The menu's (path, label) pairs: pages installed in this app that the browser's role can use."""
    acting = acting_on(request)
    held = roles.scopes_of(acting.role) if acting is not None else ALL_SCOPES
    pages = page_paths(request)
    return [(href, label) for href, label, needs in MENU if href in pages and needs <= held]


def page_paths(request: Request) -> frozenset[str]:
    """Paths of the dashboard pages installed in this app (the menu links only to pages that exist)."""
    paths: frozenset[str] = getattr(request.app.state, "web_pages", frozenset())
    return paths


def redirect(request: Request, url: str, flash: str = "", kind: str = "ok") -> RedirectResponse:
    response = RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})
    if flash:
        sessions.add_flash(platform_of(request), request, response, kind, flash)
    return response


def error_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, title=title, message=message)


class WebRoute(APIRoute):
    """Every dashboard route: a sign-in redirect, a CSRF refusal, a domain error page, never a trace."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                await attach_session(request)
                return await handler(request)
            except LoginRequired:
                target = quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
                return RedirectResponse(f"/login?next={target}", status_code=303)
            except CsrfFailed:
                return error_page(
                    request,
                    403,
                    "Form expired",
                    "This form was not accepted (missing or stale security "
                    "token). Go back, reload the page and try again.",
                )
            except DomainError as exc:
                return error_page(request, exc.http_status, "Request refused", exc.message)
            except Exception as exc:
                if is_store_full(exc):  # the store's disk is full: the write was rolled back (issue 35)
                    log.error("dashboard: store full on %s: %s", request.url.path, exc)
                    page = error_page(
                        request,
                        507,
                        "Temporarily unavailable",
                        "Nothing was changed. Please try again later.",
                    )
                    page.headers["Retry-After"] = str(FULL_RETRY_AFTER_SECONDS)
                    return page
                if is_outage(exc):  # the store is unreachable: nothing was done (issue 35)
                    page = error_page(
                        request, 503, "Temporarily unavailable", "Please try again in a few seconds."
                    )
                    page.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
                    return page
                log.exception("dashboard error on %s", request.url.path)
                return error_page(request, 500, "Something went wrong", "The error was logged; please retry.")

        return guarded
