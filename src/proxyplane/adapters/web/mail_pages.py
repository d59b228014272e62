"""Pages of the emailed links and notification choices (issue 34): verify the address, forgot / reset
the password, confirm a new address, one-click unsubscribe (RFC 8058: the mail client POSTs without a
form token; the signed link is the authority), and the notification settings page. An expired, used or
unknown link shows a page that says which and offers a new one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.account import anonymous
from proxyplane.adapters.web.base import (
    WebRoute,
    attach_session,
    call,
    form,
    platform_of,
    redirect,
    render,
    require_login,
)
from proxyplane.core.errors import DomainError
from proxyplane.domains.accounts import recovery
from proxyplane.domains.mail import prefs
from proxyplane.domains.mail.notify import KINDS
from proxyplane.ops import Operation, invoke

router = APIRouter(route_class=WebRoute, include_in_schema=False)
WHAT = {
    recovery.VERIFY: ("Email address", "/verify-email-again", "Send a new confirmation link"),
    recovery.RESET: ("Password reset", "/forgot-password", "Ask for a new reset link"),
    recovery.CHANGE: ("New email address", "/security", "Ask again from the Security page"),
}
SAID = {
    "expired": "This link has expired.",
    "used": "This link was already used: each link works once.",
    "unknown": "This link is not valid (it may be incomplete: copy the whole address from the email).",
}


async def _anon(request: Request, op: Operation, model: Any) -> Any:
    return await invoke(platform_of(request), op, anonymous(request), model)


def _link_page(request: Request, purpose: str, outcome: str) -> Response:
    title, again, label = WHAT[purpose]
    return render(
        request,
        "link_result.html",
        status=410 if outcome in ("expired", "used") else 404,
        title=title,
        message=SAID.get(outcome, SAID["unknown"]),
        again=again,
        again_label=label,
    )


@router.get("/verify-email/{token}")
async def verify_email(request: Request) -> Response:
    result = await _anon(request, recovery.VERIFY_EMAIL, recovery.Link(token=request.path_params["token"]))
    if result.outcome != "ok":
        return _link_page(request, recovery.VERIFY, result.outcome)
    target = "/overview" if await attach_session(request) is not None else "/login"
    return redirect(request, target, f"Thank you: {result.email} is confirmed. You can buy now.")


@router.get("/verify-email-again")
async def verify_again_page(request: Request) -> Response:
    return render(
        request,
        "email_form.html",
        title="Send a new confirmation link",
        action="/verify-email-again",
        button="Send the link",
        email_value=getattr(request.state, "email", ""),
    )


@router.post("/verify-email-again")
async def verify_again(request: Request) -> Response:
    data = await form(request)
    await _anon(
        request, recovery.RESEND_VERIFICATION, recovery.ByEmail(email=str(data.get("email", ""))[:320])
    )
    target = "/overview" if await attach_session(request) is not None else "/login"
    return redirect(request, target, "If that address has an unconfirmed account, a new link is on its way.")


@router.get("/forgot-password")
async def forgot_page(request: Request) -> Response:
    return render(
        request,
        "email_form.html",
        title="Forgot your password?",
        action="/forgot-password",
        button="Send me a reset link",
        email_value="",
        intro="Enter your account's email address: we send a link to choose a new password.",
    )


@router.post("/forgot-password")
async def forgot(request: Request) -> Response:
    data = await form(request)
    await _anon(request, recovery.FORGOT_PASSWORD, recovery.ByEmail(email=str(data.get("email", ""))[:320]))
    return render(
        request,
        "sent.html",
        title="Check your email",
        message="If an account uses that address, a reset link is on its way. It works once, for 30 minutes.",
    )


@router.get("/reset-password/{token}")
async def reset_page(request: Request) -> Response:
    token = request.path_params["token"]
    result = await _anon(request, recovery.CHECK_RESET, recovery.Link(token=token))
    if result.outcome != "ok":
        return _link_page(request, recovery.RESET, result.outcome)
    return render(request, "reset.html", token=token)


@router.post("/reset-password/{token}")
async def reset(request: Request) -> Response:
    token = request.path_params["token"]
    data = await form(request)
    new = str(data.get("new_password", ""))
    if new != str(data.get("new_password2", "")):
        return render(
            request, "reset.html", status=422, token=token, errors={"password": "The passwords differ."}
        )
    try:
        result = await _anon(
            request, recovery.RESET_PASSWORD, recovery.NewPassword(token=token, new_password=new)
        )
    except DomainError as exc:
        return render(
            request, "reset.html", status=exc.http_status, token=token, errors={"password": exc.message}
        )
    if result.outcome != "ok":
        return _link_page(request, recovery.RESET, result.outcome)
    return redirect(
        request, "/login", "Password changed and every browser signed out: sign in with the new one."
    )


@router.get("/confirm-email/{token}")
async def confirm_email(request: Request) -> Response:
    try:
        result = await _anon(
            request, recovery.CONFIRM_EMAIL, recovery.Link(token=request.path_params["token"])
        )
    except DomainError as exc:
        return render(
            request, "error.html", status=exc.http_status, title="Address not changed", message=exc.message
        )
    if result.outcome != "ok":
        return _link_page(request, recovery.CHANGE, result.outcome)
    target = "/security" if await attach_session(request) is not None else "/login"
    return redirect(request, target, f"Your email address is now {result.email}.")


@router.get("/unsubscribe/{token}")
async def unsubscribe_page(request: Request) -> Response:
    token = request.path_params["token"]
    shown = await _anon(request, prefs.READ_UNSUBSCRIBE, prefs.Unsubscribe(token=token))
    if shown.outcome != "ok":
        return render(request, "error.html", status=404, title="Unknown link", message=SAID["unknown"])
    return render(request, "unsubscribe.html", token=token, shown=shown, done=False)


@router.post("/unsubscribe/{token}")
async def unsubscribe(request: Request) -> Response:
    """One-click (RFC 8058): the body is `List-Unsubscribe=One-Click`, no form token; the page's own
    button posts the same."""
    token = request.path_params["token"]
    shown = await _anon(request, prefs.UNSUBSCRIBE, prefs.Unsubscribe(token=token))
    if shown.outcome != "ok":
        return render(request, "error.html", status=404, title="Unknown link", message=SAID["unknown"])
    return render(request, "unsubscribe.html", token=token, shown=shown, done=True)


@router.get("/notifications")
async def notifications_page(request: Request) -> Response:
    await require_login(request)
    current = await call(request, "get_notification_settings")
    return render(request, "notifications.html", current=current, kinds=KINDS)


@router.post("/notifications")
async def notifications(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    body: dict[str, Any] = {"email": {kind: bool(data.get(f"email_{kind}")) for kind in KINDS}}
    raw = str(data.get("threshold", "")).strip()
    try:
        body["balance_low_threshold_cents"] = round(float(raw) * 100) if raw else None
    except ValueError:
        current = await call(request, "get_notification_settings")
        return render(
            request,
            "notifications.html",
            status=422,
            current=current,
            kinds=KINDS,
            errors={"threshold": "Enter an amount in dollars, e.g. 10 or 12.50."},
        )
    try:
        await call(request, "update_notification_settings", body)
    except DomainError as exc:
        current = await call(request, "get_notification_settings")
        return render(
            request,
            "notifications.html",
            status=exc.http_status,
            current=current,
            kinds=KINDS,
            errors={"threshold": exc.message},
        )
    return redirect(request, "/notifications", "Notification settings saved.")
