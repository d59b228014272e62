"""Console sign-in (issue 33): password, then TOTP enrolment at the first sign-in (QR, own password,
recovery codes shown once) or the code (a recovery code also works), sign-out. Each step is a
console-door operation (domains/operators/console_ops.py)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import (
    COOKIE,
    ConsoleRoute,
    SignInRequired,
    call,
    form,
    principal,
    redirect,
    render,
    set_cookie,
)
from proxyplane.domains.operators.service import SESSION_LIFETIME

router = APIRouter(route_class=ConsoleRoute)
WRONG = {"wrong": "Wrong email, password or code.", "throttled": "Too many attempts: wait 15 minutes."}


@router.get("/admin/login")
async def login_page(request: Request) -> Response:
    return render(request, "login.html", error="")


@router.post("/admin/login")
async def login(request: Request) -> Response:
    data = await form(request)
    signed = await call(
        request, "console_sign_in", {"email": data.get("email", ""), "password": data.get("password", "")}
    )
    if signed.outcome != "ok":
        return render(request, "login.html", status=401, error=WRONG.get(signed.outcome, "Refused."))
    response = redirect("/admin/enrol" if signed.stage == "enrol" else "/admin/totp")
    set_cookie(request, response, COOKIE, signed.token, int(SESSION_LIFETIME.total_seconds()))
    return response


async def _pending(request: Request, stage: str) -> str:
    who = await principal(request)
    if who is None:
        raise SignInRequired()
    if who.stage != stage:
        raise SignInRequired(
            "/admin" if who.stage == "full" else f"/admin/{'enrol' if who.stage == 'enrol' else 'totp'}"
        )
    return who.session_id


@router.get("/admin/enrol")
async def enrol_page(request: Request) -> Response:
    sid = await _pending(request, "enrol")
    enrolment = await call(request, "console_enrolment", {"session_id": sid})
    secret = enrolment.uri.split("secret=")[1].split("&")[0]
    return render(request, "enrol.html", qr=enrolment.qr_svg, secret=secret, error="")


@router.post("/admin/enrol")
async def enrol(request: Request) -> Response:
    sid = await _pending(request, "enrol")
    data = await form(request)
    done = await call(
        request,
        "console_enrol",
        {"session_id": sid, "code": data.get("code", ""), "new_password": data.get("new_password", "")},
    )
    if done.outcome != "ok":
        enrolment = await call(request, "console_enrolment", {"session_id": sid})
        secret = enrolment.uri.split("secret=")[1].split("&")[0]
        error = WRONG.get(done.outcome, "Refused.")
        return render(request, "enrol.html", status=401, qr=enrolment.qr_svg, secret=secret, error=error)
    request.state.operator = None  # re-read: the session is now fully signed in
    return render(request, "recovery.html", codes=done.recovery_codes)


@router.get("/admin/totp")
async def totp_page(request: Request) -> Response:
    await _pending(request, "totp")
    return render(request, "totp.html", error="")


@router.post("/admin/totp")
async def totp(request: Request) -> Response:
    sid = await _pending(request, "totp")
    data = await form(request)
    signed = await call(request, "console_second_factor", {"session_id": sid, "code": data.get("code", "")})
    if signed.outcome != "ok":
        return render(request, "totp.html", status=401, error=WRONG.get(signed.outcome, "Refused."))
    return redirect("/admin")


@router.post("/admin/logout")
async def logout(request: Request) -> Response:
    who = await principal(request)
    await form(request)
    if who is not None:
        await call(request, "console_sign_out", {"session_id": who.session_id})
    response = redirect("/admin/login")
    response.delete_cookie(COOKIE, path="/admin")
    return response
