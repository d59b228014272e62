"""Password sign-in for people (dashboard, legacy Basic auth), password change and login history."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.bounds import INT32_MAX, documented
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.scopes import Scope
from proxyplane.core.security import hash_password, verify_password
from proxyplane.domains.accounts import throttle
from proxyplane.domains.accounts.service import check_password, find_by_email, get_customer
from proxyplane.ops import Context, Operation, register
from proxyplane.storage.models import Customer, LoginEvent
from proxyplane.storage.repos import login_events

_DUMMY_HASH = hash_password("timing-equaliser-not-a-password")


async def record_login(
    session: AsyncSession, customer_id: int, channel: str, client_ip: str, user_agent: str, success: bool
) -> None:
    await login_events.add(session, customer_id, channel, client_ip, user_agent, success)


async def password_keys(
    session: AsyncSession, email: str, client_ip: str, device: str | None = None
) -> list[throttle.Key]:
    """The shared throttle's keys of a customer's password check (domains/accounts/throttle.py): the
    account is named by its email, so an unknown email is throttled exactly like a known one."""
    email = email.strip().lower()[:320]
    customer = await find_by_email(session, email)
    known = await throttle.known_address(session, customer.id if customer else None, client_ip)
    return throttle.password_keys(f"customer:{email}", client_ip, known_address=known, device=device)


async def throttled(session: AsyncSession, email: str, client_ip: str, device: str | None = None) -> float:
    """Seconds until this email may be tried again from this address (0.0: now). Never a lockout: see
    domains/accounts/throttle.py (the owner's known address and device are spared the account ceiling)."""
    decision = await throttle.check(session, await password_keys(session, email, client_ip, device))
    return decision.retry_after


async def sign_in(
    session: AsyncSession,
    email: str,
    password: str,
    channel: str,
    client_ip: str,
    user_agent: str,
    device: str | None = None,
) -> Customer | None:
    """Check a password; record the attempt (history for a known account, the throttle's count)."""
    email = email.strip().lower()[:320]
    customer = await find_by_email(session, email)
    ok = verify_password(customer.password_hash if customer else _DUMMY_HASH, password)
    ok = ok and customer is not None and customer.status == "active"
    keys = await password_keys(session, email, client_ip, device)  # the keys `throttled` checked
    if customer is not None:
        await record_login(session, customer.id, channel, client_ip, user_agent, ok)
    if not ok:
        await throttle.record_failure(session, keys)
        return None
    await throttle.record_success(session, keys)
    return customer


async def current_password(session: AsyncSession, customer: Customer, password: str, client_ip: str) -> str:
    """ok | wrong | throttled: a signed-in customer's current password (changing the password or the email,
    turning 2FA off) behind the same throttle keys as the sign-in (a stolen session cookie must not become
    an unthrottled password oracle). Nothing is verified while throttled; a wrong password counts, so the
    caller returns the outcome as an answer (its count commits) instead of raising."""
    keys = await password_keys(session, customer.email, client_ip)
    if not (await throttle.check(session, keys)).allowed:
        return "throttled"
    if not verify_password(customer.password_hash, password):
        await throttle.record_failure(session, keys)
        return "wrong"
    await throttle.record_success(session, keys)
    return "ok"


async def change_password(
    session: AsyncSession, customer_id: int, current: str, new: str, client_ip: str
) -> str:
    """ok | wrong | throttled (see current_password); a bad new password raises ValidationFailed."""
    customer = await get_customer(session, customer_id)
    check_password(new)
    outcome = await current_password(session, customer, current, client_ip)
    if outcome != "ok":
        return outcome
    if new == current:
        raise ValidationFailed("the new password must differ from the current one", field="new_password")
    customer.password_hash = hash_password(new)
    await session.flush()
    return "ok"


class LoginHistoryQuery(BaseModel):
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=200)


class LoginRecord(BaseModel):
    time: datetime
    client_ip: str
    user_agent: str
    channel: str = Field(
        description="web (dashboard) or legacy (Basic auth)",
        json_schema_extra=documented(enum=["web", "legacy"]),
    )
    success: bool


class LoginHistory(BaseModel):
    items: list[LoginRecord]
    offset: int
    limit: int
    total: int


async def login_history(ctx: Context, q: LoginHistoryQuery) -> LoginHistory:
    where = LoginEvent.customer_id == ctx.customer_id
    count = select(func.count()).select_from(LoginEvent).where(where)
    total = (await ctx.session.execute(count)).scalar_one()
    rows = (
        await ctx.session.execute(
            select(LoginEvent)
            .where(where)
            .order_by(LoginEvent.created_at.desc(), LoginEvent.id.desc())
            .offset(q.offset)
            .limit(q.limit)
        )
    ).scalars()
    items = [
        LoginRecord(
            time=e.created_at,
            client_ip=e.client_ip,
            user_agent=e.user_agent,
            channel=e.channel,
            success=bool(e.success),
        )
        for e in rows
    ]
    return LoginHistory(items=items, offset=q.offset, limit=q.limit, total=total)


LOGIN_HISTORY = Operation(
    name="get_login_history",
    summary="Sign-ins to your account (dashboard, legacy API), newest first: time, IP, user agent, success.",
    method="GET",
    path="/customer/me/login-history",
    handler=login_history,
    input=LoginHistoryQuery,
    output=LoginHistory,
    scopes=frozenset({Scope.customer_read}),
    tags=("profile",),
)
register(LOGIN_HISTORY)
