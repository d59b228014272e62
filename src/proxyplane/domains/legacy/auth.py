"""Account email + password verification for the legacy API's Basic credential, with a login record.
argon2 runs in a worker thread so a verification never stalls the event loop."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel
from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.security import hash_password, verify_password
from proxyplane.domains.accounts import logins, throttle
from proxyplane.domains.accounts.service import find_by_email
from proxyplane.domains.accounts.two_factor import app_password_hash, legacy_password
from proxyplane.ops import LEGACY, Auth, Context, Effect, Operation
from proxyplane.storage.models import Customer
from proxyplane.storage.models.account_security import AppPassword, TwoFactor
from proxyplane.storage.repos import login_events

CHANNEL = "legacy"
_DUMMY_HASH = hash_password("legacy-timing-equaliser")


async def verify_account(
    session: AsyncSession, email: str, password: str, client_ip: str, user_agent: str
) -> tuple[Customer | None, bool]:
    """The active account with this email and password, or None, and whether an app password (two-factor
    on) was it. A login_events row is written for a known email (success or not); an unknown email still
    pays one argon2 verification (same timing)."""
    customer = await find_by_email(session, email[:320])
    # two-factor on (issue 34): an app password, never the main password (None: two-factor is off)
    app = await legacy_password(session, customer, password) if customer is not None else None
    if app is None:
        stored = customer.password_hash if customer is not None else _DUMMY_HASH
        ok = await asyncio.to_thread(verify_password, stored, password)
    else:
        ok = app
    ok = ok and customer is not None and customer.status == "active"
    if customer is not None:
        await login_events.add(session, customer.id, CHANNEL, client_ip, user_agent, ok)
    return (customer if ok else None), bool(app)


async def still_valid(
    session: AsyncSession, customer_id: int, password_hash: str, app_hash: str = ""
) -> bool:
    """A cached verification holds while the account is active and its password hash unchanged
    (a password change writes a new hash, so it invalidates every cached credential at once), and while
    what let it in still does: the main password while two-factor is off; an app password (`app_hash`)
    while two-factor is on and it is not revoked. One statement."""
    two_factor_on = exists().where(TwoFactor.customer_id == customer_id, TwoFactor.enabled_at.is_not(None))
    app_live = exists().where(
        AppPassword.customer_id == customer_id,
        AppPassword.secret_hash == app_hash,
        AppPassword.revoked_at.is_(None),
    )
    row = (
        await session.execute(
            select(
                Customer.password_hash,
                Customer.status,
                two_factor_on.label("two_factor"),
                app_live.label("app_live"),
            ).where(Customer.id == customer_id)
        )
    ).one_or_none()
    if row is None or row.status != "active" or row.password_hash != password_hash:
        return False
    return bool(row.two_factor and row.app_live) if app_hash else not row.two_factor


class Credential(BaseModel):
    email: str
    password: str


class Verified(BaseModel):
    customer_id: int | None = None
    password_hash: str = ""  # for the door's short-lived credential cache (never shown)
    app_password_hash: str = ""  # the app password's hash when one let it in (the cache checks it still does)
    retry_after: int = 0  # > 0: throttled (nothing verified); the door answers 401 with Retry-After


async def sign_in(ctx: Context, data: Credential) -> Verified:
    """The legacy door's Basic credential check through the shared throttle (domains/accounts/throttle.py,
    the same keys as the dashboard's); its login record and the throttle's count commit with this
    operation (a wrong password is an answer, not an error)."""
    ip = ctx.caller.client_ip
    keys = await logins.password_keys(ctx.session, data.email, ip)
    decision = await throttle.check(ctx.session, keys)
    if not decision.allowed:
        return Verified(retry_after=int(decision.retry_after_header))
    customer, app = await verify_account(ctx.session, data.email, data.password, ip, ctx.caller.user_agent)
    if customer is None:
        await throttle.record_failure(ctx.session, keys)
        return Verified()
    await throttle.record_success(ctx.session, keys)
    return Verified(
        customer_id=customer.id,
        password_hash=customer.password_hash,
        app_password_hash=app_password_hash(data.password) if app else "",
    )


SIGN_IN = Operation(
    name="legacy_sign_in",
    summary="legacy API: verify the Basic credential (email and password), recording the login",
    method="POST",
    path="/api/sign-in",
    handler=sign_in,
    input=Credential,
    output=Verified,
    effect=Effect.WRITE,
    auth=Auth.NONE,
    mcp=False,
    doors=LEGACY,
)
