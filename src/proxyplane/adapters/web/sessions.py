"""Dashboard sessions (server-side records behind an HttpOnly cookie: opened, touched and ended by the web
operations of domains/accounts/web_ops.py through `invoke`), CSRF tokens and flash messages."""

from __future__ import annotations

import base64
import json
import secrets

from starlette.requests import Request
from starlette.responses import Response

from proxyplane.core.clock import utcnow
from proxyplane.core.security import sign, verify_signature
from proxyplane.domains.accounts import throttle
from proxyplane.domains.accounts.web_ops import SESSION_LIFETIME, TOUCH_EVERY, SessionRef, token_hash
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models import WebSession

SESSION_COOKIE = "pp_session"
ANON_COOKIE = "pp_csrf"
FLASH_COOKIE = "pp_flash"
DEVICE_COOKIE = "pp_device"  # known device: a signed id from a previous sign-in (domains/accounts/throttle)
# an operator's read-only view of a customer's dashboard (issue 33, domains/operators/view_as.py): its own
# cookie, so that the operator's own customer session in this browser (if any) is left alone
VIEW_COOKIE = "pp_view_as"


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name, value, max_age=max_age, httponly=True, samesite="lax", secure=is_https(request), path="/"
    )


def client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    """Hand a session's random token (from web_sign_in / web_sign_up / web_change_password) to the browser."""
    set_cookie(request, response, SESSION_COOKIE, token, int(SESSION_LIFETIME.total_seconds()))


async def load_session(platform: Platform, request: Request) -> WebSession | None:
    """The live session of this browser, or None (no cookie, unknown, revoked or expired). An operator's
    view (the view cookie) comes first; a view's token is never accepted as a customer's own session."""
    row = await _live(platform, request.cookies.get(VIEW_COOKIE, ""), view=True)
    if row is None:
        row = await _live(platform, request.cookies.get(SESSION_COOKIE, ""), view=False)
    if row is None:
        return None
    now = utcnow()
    if now - row.last_seen_at >= TOUCH_EVERY:
        caller = Caller.anonymous(client_ip(request), channel="web")
        await invoke(
            platform, REGISTRY["web_touch_session"], caller, SessionRef(session_id=row.id, seen_at=now)
        )
    return row


async def _live(platform: Platform, token: str, view: bool) -> WebSession | None:
    if not token or len(token) > 200:
        return None
    async with platform.db.unit_of_work(write=False) as uow:
        row = await uow.session.get(WebSession, token_hash(token))
    if row is None or row.revoked_at is not None or row.expires_at <= utcnow():
        return None
    return row if (row.viewed_by is not None) == view else None


async def live_view(platform: Platform, token: str) -> WebSession | None:
    """The live operator view session a view link's token names, or None."""
    return await _live(platform, token, view=True)


def set_view_cookie(request: Request, response: Response, token: str, max_age: int) -> None:
    set_cookie(request, response, VIEW_COOKIE, token, max_age)


def clear_view_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(VIEW_COOKIE, path="/", httponly=True, samesite="lax", secure=is_https(request))


def set_device_cookie(request: Request, response: Response, value: str) -> None:
    """Remember this browser as one the customer signed in from (spares it the account-wide throttle)."""
    set_cookie(request, response, DEVICE_COOKIE, value, throttle.DEVICE_COOKIE_DAYS * 86400)


def clear_session_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=is_https(request))


# CSRF. Signed-in forms carry the session's own random token. Forms shown before sign-in (log in, sign
# up) carry HMAC(server key, random cookie value): a cross-site page can neither read the cookie nor
# compute the token.


def anon_csrf(platform: Platform, request: Request, response: Response | None) -> str:
    value = request.cookies.get(ANON_COOKIE, "") or request.scope.get("pp_new_anon", "")
    if not value:
        value = secrets.token_urlsafe(24)
        request.scope["pp_new_anon"] = value
    if response is not None and request.cookies.get(ANON_COOKIE, "") != value:
        set_cookie(request, response, ANON_COOKIE, value, None)
    return sign(platform.secret_key, b"csrf:" + value.encode())


def csrf_ok(platform: Platform, request: Request, sent: str, web_session: WebSession | None) -> bool:
    if not sent:
        return False
    if web_session is not None:
        return secrets.compare_digest(sent, web_session.csrf_token)
    value = request.cookies.get(ANON_COOKIE, "")
    return bool(value) and verify_signature(platform.secret_key, b"csrf:" + value.encode(), sent)


# Flash messages survive one redirect in a signed cookie.


def add_flash(platform: Platform, request: Request, response: Response, kind: str, text: str) -> None:
    payload = base64.urlsafe_b64encode(json.dumps([kind, text[:500]]).encode()).decode()
    set_cookie(
        request, response, FLASH_COOKIE, payload + "." + sign(platform.secret_key, payload.encode()), 60
    )


def take_flash(platform: Platform, request: Request) -> tuple[str, str] | None:
    raw = request.cookies.get(FLASH_COOKIE, "")
    payload, _, signature = raw.partition(".")
    if not payload or not verify_signature(platform.secret_key, payload.encode(), signature):
        return None
    try:
        kind, text = json.loads(base64.urlsafe_b64decode(payload.encode()))
    except (ValueError, TypeError):
        return None
    return str(kind), str(text)
