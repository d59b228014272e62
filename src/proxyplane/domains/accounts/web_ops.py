"""The dashboard's account actions as registered operations served by the "web" door only: sign up,
sign in, sign out, change password, and keeping a session alive. Each runs through `invoke` (one unit of
work, one commit) like every other operation; the dashboard (adapters/web/account.py, sessions.py) only
reads forms, sets cookies and renders. A session is a server-side record (`WebSession`) whose random
token goes to the browser in an HttpOnly cookie; only its hash is stored."""

from __future__ import annotations

import hashlib
import math
import secrets
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import RateLimited
from proxyplane.core.text_input import Label
from proxyplane.domains.accounts import logins, throttle
from proxyplane.domains.accounts.service import create_customer
from proxyplane.ops import Auth, Context, Operation, register, web_op
from proxyplane.storage.models import WebSession
from proxyplane.storage.repos import web_sessions

WEB = frozenset({"web"})
SESSION_LIFETIME = timedelta(days=14)
TOUCH_EVERY = timedelta(minutes=5)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def open_session(
    session: AsyncSession,
    customer_id: int,
    client_ip: str,
    user_agent: str,
    *,
    viewed_by: str | None = None,
    lifetime: timedelta = SESSION_LIFETIME,
) -> str:
    """A new session record; returns the token for the browser's cookie. `viewed_by`: an operator's
    read-only view of the customer's dashboard (issue 33, domains/operators/view_as.py)."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    row = WebSession(
        id=token_hash(token),
        customer_id=customer_id,
        csrf_token=secrets.token_urlsafe(32),
        client_ip=client_ip[:45],
        user_agent=user_agent[:300],
        created_at=now,
        last_seen_at=now,
        expires_at=now + lifetime,
        viewed_by=viewed_by,
    )
    await web_sessions.add(session, row)
    return token


async def end_sessions(session: AsyncSession, customer_id: int, only: str | None = None) -> None:
    """Revoke one session (sign out) or all of a customer's sessions (password change)."""
    await web_sessions.revoke(session, customer_id, only, utcnow())


class SignUp(BaseModel):
    email: str
    name: Label = ""  # no control, bidi or zero-width characters (issue 30.5)
    password: str


class SignIn(BaseModel):
    email: str
    password: str
    device: str = Field(default="", description="the browser's known-device cookie (throttle.device_token)")


class PasswordChange(BaseModel):
    current_password: str
    new_password: str


class SessionRef(BaseModel):
    session_id: str = Field(description="the session record's id (the token's hash)")
    seen_at: datetime | None = None


class Signed(BaseModel):
    outcome: str = Field(
        description="ok | throttled | wrong | second_factor (token: the pending sign-in) | expired"
    )
    customer_id: int | None = None
    token: str = ""
    retry_after: int = Field(default=0, description="throttled: seconds until the next attempt may be made")
    device: str = Field(default="", description="ok: the known-device cookie to keep (sign-in)")


async def sign_up(ctx: Context, data: SignUp) -> Signed:
    from proxyplane.domains.accounts.recovery import send_verification

    email, name = data.email.strip(), data.name[:200]
    ip, agent = ctx.caller.client_ip, ctx.caller.user_agent
    settings = ctx.platform.settings  # issue 30.4: per address and over the platform, shared
    keys = throttle.signup_keys(ip, settings.signup_per_address, settings.signup_total)
    decision = await throttle.check(ctx.session, keys)
    if not decision.allowed:
        raise RateLimited(
            "Too many sign-ups from this address. Try again later.",
            field="email",
            retry_after_seconds=int(decision.retry_after_header),
        )
    customer = await create_customer(ctx.session, email, data.password, name, verified=False)
    await throttle.record_failure(ctx.session, keys)  # counts one account created
    await logins.record_login(ctx.session, customer.id, "web", ip, agent, True)
    await send_verification(ctx.session, ctx.platform, customer)  # issue 34: buying waits for it
    return Signed(
        outcome="ok", customer_id=customer.id, token=await open_session(ctx.session, customer.id, ip, agent)
    )


async def sign_in(ctx: Context, data: SignIn) -> Signed:
    """A wrong password is an answer, not an error: its failure record is committed (throttling)."""
    email, ip, agent = data.email.strip(), ctx.caller.client_ip, ctx.caller.user_agent
    secret, account = ctx.platform.secret_key, f"customer:{email.lower()}"
    device = throttle.device_of(secret, data.device, account) if data.device else None
    wait = await logins.throttled(ctx.session, email, ip, device)  # issue 30: slowed, never locked
    if wait:
        return Signed(outcome="throttled", retry_after=max(1, math.ceil(wait)))
    customer = await logins.sign_in(ctx.session, email, data.password, "web", ip, agent, device)
    if customer is None:
        return Signed(outcome="wrong")
    from proxyplane.domains.accounts import two_factor  # issue 34
    from proxyplane.domains.accounts.sign_in_mail import after_sign_in

    if await two_factor.enabled(ctx.session, customer.id) is not None:  # the code comes next
        return Signed(
            outcome="second_factor",
            token=two_factor.pending_token(ctx.platform.secret_key, customer, utcnow()),
        )
    token = await open_session(ctx.session, customer.id, ip, agent)
    await after_sign_in(ctx.session, ctx.platform, customer, ip, agent)
    known = data.device if device else throttle.device_token(secret, account)
    return Signed(outcome="ok", customer_id=customer.id, token=token, device=known)


async def change_password(ctx: Context, data: PasswordChange) -> Signed:
    """New password; every session of the customer ends and this browser gets a fresh one."""
    outcome = await logins.change_password(
        ctx.session, ctx.customer_id, data.current_password, data.new_password, ctx.caller.client_ip
    )
    if outcome != "ok":  # an answer, not an error: the throttle's count commits
        return Signed(outcome=outcome, customer_id=ctx.customer_id)
    from proxyplane.domains.accounts.recovery import RESET
    from proxyplane.storage.repos.account_security import void_tokens

    await end_sessions(ctx.session, ctx.customer_id)
    await void_tokens(ctx.session, ctx.customer_id, RESET, utcnow())  # an earlier reset link dies with it
    token = await open_session(ctx.session, ctx.customer_id, ctx.caller.client_ip, ctx.caller.user_agent)
    return Signed(outcome="ok", customer_id=ctx.customer_id, token=token)


async def sign_out(ctx: Context, data: SessionRef) -> None:
    await end_sessions(ctx.session, ctx.customer_id, only=data.session_id)


async def touch_session(ctx: Context, data: SessionRef) -> None:
    """Record that a session is in use (at most every TOUCH_EVERY: the dashboard decides when)."""
    await web_sessions.touch(ctx.session, data.session_id, data.seen_at or utcnow())


def _op(
    name: str, handler: object, input: type[BaseModel], auth: Auth, output: type[BaseModel] | None
) -> Operation:
    return web_op(name, handler, input, output, auth=auth)


SIGN_UP = _op("sign_up", sign_up, SignUp, Auth.NONE, Signed)
SIGN_IN = _op("sign_in", sign_in, SignIn, Auth.NONE, Signed)
CHANGE_PASSWORD = _op("change_password", change_password, PasswordChange, Auth.KEY, Signed)
SIGN_OUT = _op("sign_out", sign_out, SessionRef, Auth.KEY, None)
TOUCH_SESSION = _op("touch_session", touch_session, SessionRef, Auth.NONE, None)
register(SIGN_UP, SIGN_IN, CHANGE_PASSWORD, SIGN_OUT, TOUCH_SESSION)
