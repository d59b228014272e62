"""Sign up, log in, log out, change password, login history."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web import sessions
from proxyplane.adapters.web.base import (
    WebRoute,
    attach_session,
    call,
    caller,
    form,
    platform_of,
    redirect,
    render,
    require_login,
    web_session,
)
from proxyplane.core.errors import DomainError
from proxyplane.domains.accounts import web_ops
from proxyplane.ops import Caller, invoke

router = APIRouter(route_class=WebRoute, include_in_schema=False)


def anonymous(request: Request) -> Caller:
    """Before sign-in: the browser's address and agent, no customer."""
    return Caller(
        customer_id=None,
        client_ip=sessions.client_ip(request),
        channel="web",
        user_agent=request.headers.get("user-agent", "")[:300],
    )


def safe_next(value: str) -> str:
    """Only a local path: never `//host` or a scheme, so a crafted link cannot bounce to another site."""
    if value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/"


@router.get("/")
async def home(request: Request) -> Response:
    if await attach_session(request) is None:
        return redirect(request, "/login")
    return redirect(request, "/overview")


@router.get("/login")
async def login_page(request: Request) -> Response:
    if await attach_session(request) is not None:
        return redirect(request, "/overview")
    return render(request, "login.html", next=safe_next(request.query_params.get("next", "/")))


@router.post("/login")
async def login(request: Request) -> Response:
    data = await form(request)
    platform = platform_of(request)
    email = str(data.get("email", "")).strip()
    password = str(data.get("password", ""))
    target = safe_next(str(data.get("next", "/")))
    device = request.cookies.get(sessions.DEVICE_COOKIE, "")  # a previous sign-in in this browser
    signed = await invoke(
        platform,
        web_ops.SIGN_IN,
        anonymous(request),
        web_ops.SignIn(email=email, password=password, device=device),
    )
    if signed.outcome == "throttled":  # issue 30: slowed, never locked (docs/decisions/throttling.md)
        wait = (
            f"{signed.retry_after} seconds"
            if signed.retry_after < 120
            else f"{signed.retry_after // 60} minutes"
        )
        page = render(
            request,
            "login.html",
            status=429,
            next=target,
            email_value=email,
            errors={"login": f"Too many failed sign-ins. Wait {wait} and try again."},
        )
        page.headers["Retry-After"] = str(signed.retry_after)
        return page
    if signed.outcome == "second_factor":  # issue 34: the code step (adapters/web/two_factor_pages.py)
        return render(request, "login_code.html", pending=signed.token, next=target)
    if signed.outcome != "ok":
        return render(
            request,
            "login.html",
            status=401,
            next=target,
            email_value=email,
            errors={"login": "Wrong email or password."},
        )
    response = redirect(request, target)
    sessions.set_session_cookie(request, response, signed.token)
    if signed.device and signed.device != device:
        sessions.set_device_cookie(request, response, signed.device)
    return response


@router.get("/signup")
async def signup_page(request: Request) -> Response:
    if await attach_session(request) is not None:
        return redirect(request, "/overview")
    # an invitation's "create a sign-in" comes back to the invitation (issue 34.5)
    return render(
        request,
        "signup.html",
        next=safe_next(request.query_params.get("next", "/overview")),
        email_value=request.query_params.get("email", "")[:320],
    )


@router.post("/signup")
async def signup(request: Request) -> Response:
    data = await form(request)
    platform = platform_of(request)
    email = str(data.get("email", "")).strip()
    name = str(data.get("name", ""))
    password = str(data.get("password", ""))
    values = {"email_value": email, "name_value": name, "next": safe_next(str(data.get("next", "/overview")))}
    if password != str(data.get("password2", "")):
        return render(
            request, "signup.html", status=422, errors={"password2": "The passwords differ."}, **values
        )
    try:
        signed = await invoke(
            platform,
            web_ops.SIGN_UP,
            anonymous(request),
            web_ops.SignUp(email=email, name=name, password=password),
        )
    except DomainError as exc:
        field = str(exc.extra.get("field", "email"))
        page = render(request, "signup.html", status=exc.http_status, errors={field: exc.message}, **values)
        if "retry_after_seconds" in exc.extra:  # the sign-up throttle (issue 30.4)
            page.headers["Retry-After"] = str(exc.extra["retry_after_seconds"])
        return page
    response = redirect(
        request,
        str(values["next"]) if values["next"] != "/" else "/overview",
        "Welcome! Your account is ready. We sent you a link to confirm your email address: confirm it to "
        "buy (you can top up your wallet already).",
    )
    sessions.set_session_cookie(request, response, signed.token)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    row = await require_login(request)
    await form(request)
    await invoke(
        platform_of(request),
        web_ops.SIGN_OUT,
        caller(request, personal=True),
        web_ops.SessionRef(session_id=row.id),
    )
    response = redirect(request, "/login", "You are signed out.")
    sessions.clear_session_cookie(request, response)
    return response


async def _security(
    request: Request, status: int = 200, errors: dict[str, str] | None = None, **shown: object
) -> Response:
    try:
        offset = max(0, int(request.query_params.get("offset", "0")))
    except ValueError:
        offset = 0
    history = await call(request, "get_login_history", {"offset": offset, "limit": 25})
    state = await call(request, "web_two_factor_status")  # issue 34: address, two-factor, app passwords
    sessions_list = await call(request, "web_list_sessions", {"current": web_session(request).id})
    return render(
        request,
        "security.html",
        status=status,
        history=history,
        state=state,
        sessions=sessions_list.items,
        errors=errors or {},
        **shown,
    )


PASSWORD_REFUSED = {  # the current password, checked behind the sign-in's throttle
    "wrong": (422, "The current password is not correct."),
    "throttled": (429, "Too many wrong passwords: wait a few minutes and try again."),
}


@router.get("/security")
async def security(request: Request) -> Response:
    await require_login(request)
    return await _security(request)


@router.post("/security/password")
async def change_password(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    platform = platform_of(request)
    new = str(data.get("new_password", ""))
    if new != str(data.get("new_password2", "")):
        return await _security(request, 422, {"password": "The new passwords differ."})
    change = web_ops.PasswordChange(current_password=str(data.get("current_password", "")), new_password=new)
    try:
        signed = await invoke(platform, web_ops.CHANGE_PASSWORD, caller(request, personal=True), change)
    except DomainError as exc:
        return await _security(request, exc.http_status, {"password": exc.message})
    if signed.outcome != "ok":
        status, message = PASSWORD_REFUSED[signed.outcome]
        return await _security(request, status, {"password": message})
    response = redirect(
        request, "/security", "Password changed. Every other signed-in browser was signed out."
    )
    sessions.set_session_cookie(request, response, signed.token)
    return response
