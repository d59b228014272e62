"""Two-factor sign-in pages (issue 34): the sign-in's code step, turning two-factor on (QR code, first
code, recovery codes shown once) and off, new recovery codes, app passwords, the email change request
and signing out another browser, all from the Security page."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web import sessions
from proxyplane.adapters.web.account import PASSWORD_REFUSED, _security, anonymous, safe_next
from proxyplane.adapters.web.base import WebRoute, call, form, platform_of, redirect, render, require_login
from proxyplane.core.errors import DomainError
from proxyplane.domains.accounts import two_factor
from proxyplane.ops import invoke

router = APIRouter(route_class=WebRoute, include_in_schema=False)
WRONG = {
    "wrong": (422, "That code is not right (or was used already)."),
    "throttled": (429, "Too many wrong codes: wait a minute and try again."),
    "wrong_password": PASSWORD_REFUSED["wrong"],
    "password_throttled": PASSWORD_REFUSED["throttled"],
}


@router.post("/login/code")
async def login_code(request: Request) -> Response:
    data = await form(request)
    target = safe_next(str(data.get("next", "/")))
    pending = str(data.get("pending", ""))[:300]
    body = two_factor.CodeSignIn(pending=pending, code=str(data.get("code", ""))[:40])
    signed = await invoke(platform_of(request), two_factor.SIGN_IN_CODE, anonymous(request), body)
    if signed.outcome == "expired":
        return redirect(
            request, f"/login?next={target}", "That sign-in took too long: enter your password again."
        )
    if signed.outcome != "ok":
        message = (
            "Too many wrong codes. Wait 15 minutes and try again."
            if signed.outcome == "throttled"
            else "That code is not right (or was used already)."
        )
        status = 429 if signed.outcome == "throttled" else 401
        return render(
            request, "login_code.html", status=status, pending=pending, next=target, errors={"code": message}
        )
    response = redirect(request, target)
    sessions.set_session_cookie(request, response, signed.token)
    return response


@router.post("/security/two-factor/setup")
async def setup(request: Request) -> Response:
    await require_login(request)
    await form(request)
    return render(request, "two_factor_setup.html", setup=await call(request, "web_two_factor_setup", {}))


@router.post("/security/two-factor/enable")
async def enable(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        codes = await call(request, "web_two_factor_enable", {"code": str(data.get("code", ""))[:40]})
    except DomainError as exc:
        # a new secret: the page shows a fresh QR code (the unconfirmed one is replaced)
        setup_again = await call(request, "web_two_factor_setup", {})
        return render(
            request,
            "two_factor_setup.html",
            status=exc.http_status,
            setup=setup_again,
            errors={"code": exc.message + " Scan this new code and try again."},
        )
    return render(request, "recovery_codes.html", codes=codes.recovery_codes)


@router.post("/security/two-factor/codes")
async def new_codes(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        codes = await call(request, "web_two_factor_recovery_codes", {"code": str(data.get("code", ""))[:40]})
    except DomainError as exc:
        return await _security(request, exc.http_status, {"codes": exc.message})
    if codes.outcome != "ok":
        status, message = WRONG[codes.outcome]
        return await _security(request, status, {"codes": message})
    return render(request, "recovery_codes.html", codes=codes.recovery_codes)


@router.post("/security/two-factor/disable")
async def disable(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body = {"code": str(data.get("code", ""))[:40], "current_password": str(data.get("current_password", ""))}
    try:
        state = await call(request, "web_two_factor_disable", body)
    except DomainError as exc:
        return await _security(request, exc.http_status, {"disable": exc.message})
    if state.outcome != "ok":
        status, message = WRONG[state.outcome]
        return await _security(request, status, {"disable": message})
    return redirect(request, "/security", "Two-factor sign-in is off.")


@router.post("/security/app-passwords")
async def create_app_password(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        created = await call(request, "web_create_app_password", {"name": str(data.get("name", ""))[:100]})
    except DomainError as exc:
        return await _security(request, exc.http_status, {"app_password": exc.message})
    return await _security(request, new_app_password=created)


@router.post("/security/app-passwords/{password_id}/revoke")
async def revoke_app_password(request: Request) -> Response:
    await require_login(request)
    await form(request)
    await call(request, "web_revoke_app_password", {"id": request.path_params["password_id"]})
    return redirect(request, "/security", "App password revoked.")


@router.post("/security/email")
async def change_email(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body = {
        "new_email": str(data.get("new_email", ""))[:320],
        "current_password": str(data.get("current_password", "")),
    }
    try:
        sent = await call(request, "web_change_email", body)
    except DomainError as exc:
        return await _security(request, exc.http_status, {"email": exc.message})
    if sent.outcome in PASSWORD_REFUSED:
        status, message = PASSWORD_REFUSED[sent.outcome]
        return await _security(request, status, {"email": message})
    return redirect(request, "/security", f"We sent a confirmation link to {sent.email}: open it to switch.")


@router.post("/security/sessions/{ref}/end")
async def end_session(request: Request) -> Response:
    await require_login(request)
    await form(request)
    await call(request, "web_end_session", {"ref": request.path_params["ref"]})
    return redirect(request, "/security", "That browser is signed out.")
