"""Console plumbing (issue 33): templates, the signed-in operator behind the `pp_admin` cookie, CSRF-checked
forms, operation calls through `invoke` (the "console" door), error pages. Like the customer dashboard, a
page action never touches domain code: it builds the operation's input from the form and invokes it.

CSRF: a signed-in form carries its session's random token; the sign-in form carries HMAC(server key,
random cookie value). A changing form also carries a one-use `form_token` (the dashboard's mechanism of
adapters/web/forms.py): it is the action's audit row's unique key, so a form sent twice acts once."""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from proxyplane.core.errors import AlreadyApplied, DomainError, ValidationFailed
from proxyplane.core.security import sign, verify_signature
from proxyplane.domains.operators.auth import OperatorPrincipal, by_session
from proxyplane.domains.operators.roles import RESELLER, allowed
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

log = logging.getLogger("proxyplane.admin")
HERE = Path(__file__).parent
COOKIE = "pp_admin"
ANON = "pp_admin_csrf"
DOOR = "console"
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def money(cents: int | None) -> str:
    if cents is None:
        return ""
    sign_ = "-" if cents < 0 else ""
    cents = abs(int(cents))
    return f"{sign_}${cents // 100:,}.{cents % 100:02d}"


# the pages' links and forms name staff permissions; for a reseller, its own stand for them: the same pages
# over its own customers (each operation checks the binding: domains/operators/resellers.py)
RESELLER_SEES = {
    "customers.read": "reseller.customers",
    "customers.write": "reseller.customers",
    "customers.email": "reseller.customers",
    "services.suspend": "reseller.customers",
    "wallet.credit": "reseller.credit",
    "tickets.read": "reseller.tickets",
    "tickets.write": "reseller.tickets",
}
env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
env.filters["money"] = money
env.filters["when"] = lambda v: (v or "")[:16].replace("T", " ")


class SignInRequired(Exception):
    def __init__(self, to: str = "/admin/login") -> None:
        self.to = to


class CsrfFailed(Exception):
    pass


def platform_of(request: Request) -> Platform:
    platform: Platform = request.app.state.platform
    return platform


def client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def principal(request: Request) -> OperatorPrincipal | None:
    if "operator" not in request.state._state:
        token = request.cookies.get(COOKIE, "")
        request.state.operator = await by_session(platform_of(request).db, token) if token else None
    found: OperatorPrincipal | None = request.state.operator
    return found


async def signed_in(request: Request) -> OperatorPrincipal:
    """The fully signed-in operator (password and second factor), else a redirect to the due step."""
    who = await principal(request)
    if who is None:
        raise SignInRequired()
    if who.stage != "full":
        raise SignInRequired("/admin/enrol" if who.stage == "enrol" else "/admin/totp")
    return who


def caller(request: Request, who: OperatorPrincipal | None) -> Caller:
    return Caller(
        customer_id=None,
        client_ip=client_ip(request),
        channel=DOOR,
        user_agent=request.headers.get("user-agent", "")[:300],
        operator_id=who.operator_id if who else None,
        role=who.role if who else "",
        actor=who.email if who else "",
    )


async def call(request: Request, name: str, data: dict[str, Any] | None = None, form_token: str = "") -> Any:
    """Run a console-door operation for the signed-in operator (or a sign-in step)."""
    op = REGISTRY[name]
    if not op.serves(DOOR):
        raise RuntimeError(f"{name} is not served by the console")
    try:
        model = op.input.model_validate(data or {}) if op.input is not None else None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ValidationFailed(f"{where}: {first.get('msg')}" if where else str(first.get("msg"))) from None
    door_key = f"console:{form_token[:64]}" if form_token else None
    who = await principal(request)
    return await invoke(platform_of(request), op, caller(request, who), model, door_key=door_key)


def anon_csrf(request: Request, response: Response | None) -> str:
    value = request.cookies.get(ANON, "") or request.scope.get("pp_admin_anon", "")
    if not value:
        value = secrets.token_urlsafe(24)
        request.scope["pp_admin_anon"] = value
    if response is not None and request.cookies.get(ANON, "") != value:
        set_cookie(request, response, ANON, value, None)
    return sign(platform_of(request).secret_key, b"admin-csrf:" + value.encode())


async def form(request: Request) -> dict[str, Any]:
    """The posted form after its CSRF token is checked."""
    data = await request.form()
    values: dict[str, Any] = {k: data.get(k) for k in data}
    sent = str(values.pop("csrf", "") or "")
    who = await principal(request)
    if who is not None and who.csrf_token:
        ok = bool(sent) and secrets.compare_digest(sent, who.csrf_token)
    else:
        value = request.cookies.get(ANON, "")
        key = platform_of(request).secret_key
        ok = bool(sent and value) and verify_signature(key, b"admin-csrf:" + value.encode(), sent)
    if not ok:
        raise CsrfFailed()
    return values


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
    secure = request.url.scheme == "https"
    response.set_cookie(
        name, value, max_age=max_age, httponly=True, samesite="strict", secure=secure, path="/admin"
    )


def render(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    response = HTMLResponse("", status_code=status, headers=HEADERS)
    who: OperatorPrincipal | None = request.state._state.get("operator")
    csrf = who.csrf_token if who is not None else anon_csrf(request, response)
    body = env.get_template(template).render(
        request=request,
        csrf=csrf,
        who=who if who is not None and who.stage == "full" else None,
        can=(
            lambda p: (
                who is not None and (allowed(who.role, p) or allowed(who.role, RESELLER_SEES.get(p, "")))
            )
        ),
        reseller=who is not None and who.role == RESELLER,
        path=request.url.path,
        flash=request.query_params.get("done", "")[:200],
        form_token=uuid.uuid4().hex,
        **ctx,
    )
    response.body = body.encode()
    response.headers["content-length"] = str(len(response.body))
    return response


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})


def error_page(request: Request, status: int, title: str, message: str) -> HTMLResponse:
    return render(request, "error.html", status=status, title=title, message=message)


class ConsoleRoute(APIRoute):
    """Every console route: a sign-in redirect, a CSRF refusal, a domain error page (403 names the
    missing permission), never a trace."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired as exc:
                return redirect(exc.to)
            except CsrfFailed:
                return error_page(request, 403, "Form expired", "Reload the page and try again.")
            except AlreadyApplied as exc:
                return error_page(request, 409, "Already done", exc.message)
            except DomainError as exc:
                return error_page(request, exc.http_status, "Refused", exc.message)
            except Exception:
                log.exception("console error on %s", request.url.path)
                return error_page(request, 500, "Something went wrong", "The error was logged; please retry.")

        return guarded
