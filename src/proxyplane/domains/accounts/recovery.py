"""Emailed single-use links (issue 34): verify the address after sign-up, reset a forgotten password,
confirm a new address. Each link carries a random token (only its hash is stored), works once and
expires; an expired, used or unknown link is an answer (`outcome`), not an error, so the page can say
which and offer a new one. "Forgot password" and "send the link again" answer the same whether the
address has an account or not."""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.core.errors import Conflict, ValidationFailed
from proxyplane.core.security import hash_password
from proxyplane.domains.accounts import logins
from proxyplane.domains.accounts.service import check_password, find_by_email, get_customer, normalise_email
from proxyplane.domains.mail.compose import render
from proxyplane.domains.mail.outbox import queue
from proxyplane.ops import Auth, Context, Effect, Operation, register, web_op
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.account_security import AccountToken
from proxyplane.storage.repos import account_security as repo

VERIFY, RESET, CHANGE = "verify_email", "reset_password", "change_email"
LIFETIMES = {VERIFY: timedelta(hours=48), RESET: timedelta(minutes=30), CHANGE: timedelta(hours=24)}
PATHS = {VERIFY: "/verify-email", RESET: "/reset-password", CHANGE: "/confirm-email"}
WORDS = {VERIFY: "48 hours", RESET: "30 minutes", CHANGE: "24 hours"}
MAX_LINKS_PER_HOUR = 3  # per account and purpose: more requests answer the same and send nothing


async def _send_link(
    session: AsyncSession,
    platform: Platform,
    customer_id: int,
    purpose: str,
    to: str,
    subject: str,
    lines: list[str],
) -> None:
    now = utcnow()
    raw = await repo.new_token(session, customer_id, purpose, to, now, LIFETIMES[purpose])
    url = f"{platform.settings.base_url()}{PATHS[purpose]}/{raw}"
    labels = {VERIFY: "Confirm my address", RESET: "Choose a new password", CHANGE: "Confirm the new address"}
    mail = render(
        "link",
        purpose,
        to,
        subject,
        lines=lines,
        action_url=url,
        action_label=labels[purpose],
        expires=f"This link works once, for {WORDS[purpose]}.",
    )
    await queue(session, mail, sender=platform.settings.mail_from, customer_id=customer_id)


async def _recent_links(session: AsyncSession, customer_id: int, purpose: str) -> int:
    since = utcnow() - timedelta(hours=1)
    count = select(func.count()).where(
        AccountToken.customer_id == customer_id,
        AccountToken.purpose == purpose,
        AccountToken.created_at >= since,
    )
    return int((await session.execute(count)).scalar_one())


async def send_verification(session: AsyncSession, platform: Platform, customer: Customer) -> bool:
    """A verification link to the account's address (False: too many this hour, none sent)."""
    if await _recent_links(session, customer.id, VERIFY) >= MAX_LINKS_PER_HOUR:
        return False
    await _send_link(
        session,
        platform,
        customer.id,
        VERIFY,
        customer.email,
        "Confirm your email address",
        [
            "Welcome to ProxyPlane. Confirm that this address is yours to start buying proxies "
            "(you can already look around and top up your wallet)."
        ],
    )
    return True


async def notice(
    session: AsyncSession, platform: Platform, customer_id: int, to: str, subject: str, lines: list[str]
) -> None:
    """A security notice (password changed, address changed): not a notification, cannot be turned off."""
    base = platform.settings.base_url()
    mail = render(
        "notice",
        "security_notice",
        to,
        subject,
        lines=lines,
        action_url=f"{base}/security",
        action_label="Review your account security",
    )
    await queue(session, mail, sender=platform.settings.mail_from, customer_id=customer_id)


async def check_link(
    session: AsyncSession, raw: str, purpose: str, now: datetime
) -> tuple[str, AccountToken | None]:
    """ok | expired | used | unknown, and the token row."""
    row = await session.get(AccountToken, repo.digest(raw)) if raw else None
    if row is None or row.purpose != purpose:
        return "unknown", None
    if row.used_at is not None:
        return "used", row
    if as_utc(row.expires_at) <= now:
        return "expired", row
    return "ok", row


class Link(BaseModel):
    token: str = Field(max_length=200)


class ByEmail(BaseModel):
    email: str = Field(max_length=320)


class NewPassword(Link):
    new_password: str = Field(max_length=200)


class EmailChange(BaseModel):
    new_email: str = Field(max_length=320)
    current_password: str = Field(max_length=200)


class LinkOutcome(BaseModel):
    outcome: str = Field(
        description="ok | expired | used | unknown | sent | wrong | throttled (current password)"
    )
    email: str = ""


async def verify_email(ctx: Context, data: Link) -> LinkOutcome:
    now = utcnow()
    outcome, row = await check_link(ctx.session, data.token, VERIFY, now)
    if outcome != "ok" or row is None:
        return LinkOutcome(outcome=outcome)
    if not await repo.use_token(ctx.session, row.id, now):
        return LinkOutcome(outcome="used")
    customer = await get_customer(ctx.session, row.customer_id)
    if customer.email != row.email:  # the address changed since: this link proves nothing about it
        return LinkOutcome(outcome="expired")
    if customer.email_verified_at is None:
        customer.email_verified_at = now
    await ctx.session.flush()
    return LinkOutcome(outcome="ok", email=customer.email)


async def resend_verification(ctx: Context, data: ByEmail) -> LinkOutcome:
    customer = await find_by_email(ctx.session, data.email)
    if customer is not None and customer.status == "active" and customer.email_verified_at is None:
        await send_verification(ctx.session, ctx.platform, customer)
    return LinkOutcome(outcome="sent")


async def send_reset(session: AsyncSession, platform: Platform, customer: Customer) -> bool:
    """A password-reset link to the account's address (False: too many this hour, none sent)."""
    if await _recent_links(session, customer.id, RESET) >= MAX_LINKS_PER_HOUR:
        return False
    await _send_link(
        session,
        platform,
        customer.id,
        RESET,
        customer.email,
        "Reset your ProxyPlane password",
        ["Someone (hopefully you) asked to reset the password of your ProxyPlane account."],
    )
    return True


async def forgot_password(ctx: Context, data: ByEmail) -> LinkOutcome:
    """Always "sent": a reset link goes only to an active account's address, at most 3 an hour."""
    customer = await find_by_email(ctx.session, data.email)
    # an account handed over to a team member (issue 34.5) has no sign-in of its own left to reset
    if customer is not None and customer.status == "active" and customer.holder_member_id is None:
        await send_reset(ctx.session, ctx.platform, customer)
    return LinkOutcome(outcome="sent")


async def check_reset(ctx: Context, data: Link) -> LinkOutcome:
    outcome, _ = await check_link(ctx.session, data.token, RESET, utcnow())
    return LinkOutcome(outcome=outcome)


async def reset_password(ctx: Context, data: NewPassword) -> LinkOutcome:
    """A new password from a reset link: every session of the account ends (sign in again, with the
    second factor if it is on), the other reset links stop working, the address is told."""
    from proxyplane.domains.accounts.web_ops import end_sessions

    now = utcnow()
    outcome, row = await check_link(ctx.session, data.token, RESET, now)
    if outcome != "ok" or row is None:
        return LinkOutcome(outcome=outcome)
    check_password(data.new_password)
    if not await repo.use_token(ctx.session, row.id, now):
        return LinkOutcome(outcome="used")
    customer = await get_customer(ctx.session, row.customer_id)
    customer.password_hash = hash_password(data.new_password)
    if customer.email == row.email and customer.email_verified_at is None:
        customer.email_verified_at = now  # the link reached this address
    await repo.void_tokens(ctx.session, customer.id, RESET, now)
    await end_sessions(ctx.session, customer.id)
    await notice(
        ctx.session,
        ctx.platform,
        customer.id,
        customer.email,
        "Your password was changed",
        [
            "The password of your ProxyPlane account was reset and every signed-in browser was signed out.",
            "If this was not you, reset it again at once and turn on two-factor sign-in.",
        ],
    )
    await ctx.session.flush()
    return LinkOutcome(outcome="ok", email=customer.email)


async def change_email(ctx: Context, data: EmailChange) -> LinkOutcome:
    """Sends a confirmation link to the new address; the account keeps the old one until it is opened."""
    customer = await get_customer(ctx.session, ctx.customer_id)
    checked = await logins.current_password(
        ctx.session, customer, data.current_password, ctx.caller.client_ip
    )
    if checked != "ok":  # wrong | throttled: an answer (the throttle's count commits), not an error
        return LinkOutcome(outcome=checked)
    new = normalise_email(data.new_email)
    if new == customer.email:
        raise ValidationFailed("this is already your address", field="new_email")
    if await find_by_email(ctx.session, new) is not None:
        raise Conflict(f"an account with email {new} already exists", field="new_email")
    if await _recent_links(ctx.session, customer.id, CHANGE) >= MAX_LINKS_PER_HOUR:
        raise ValidationFailed("too many address changes this hour; try again later", field="new_email")
    await _send_link(
        ctx.session,
        ctx.platform,
        customer.id,
        CHANGE,
        new,
        "Confirm your new email address",
        [
            f"Open this link to make {new} the address of your ProxyPlane account "
            f"(instead of {customer.email})."
        ],
    )
    return LinkOutcome(outcome="sent", email=new)


async def confirm_email(ctx: Context, data: Link) -> LinkOutcome:
    """The new address is the account's (and verified); the old address is told."""
    now = utcnow()
    outcome, row = await check_link(ctx.session, data.token, CHANGE, now)
    if outcome != "ok" or row is None:
        return LinkOutcome(outcome=outcome)
    if not await repo.use_token(ctx.session, row.id, now):
        return LinkOutcome(outcome="used")
    customer = await get_customer(ctx.session, row.customer_id)
    old, customer.email, customer.email_verified_at = customer.email, row.email, now
    try:
        async with ctx.session.begin_nested():
            await ctx.session.flush()
    except IntegrityError as exc:
        raise Conflict(f"an account with email {row.email} already exists") from exc
    # the links sent to the old address (a reset, a verification) die with it: its mailbox no longer speaks
    # for the account (h3's review: an old mailbox could reset the password after the move)
    for purpose in (CHANGE, RESET, VERIFY):
        await repo.void_tokens(ctx.session, customer.id, purpose, now)
    await notice(
        ctx.session,
        ctx.platform,
        customer.id,
        old,
        "Your ProxyPlane email address was changed",
        [
            f"The address of your ProxyPlane account is now {row.email}; "
            f"this address ({old}) gets no more email.",
            "If this was not you, contact support at once.",
        ],
    )
    return LinkOutcome(outcome="ok", email=row.email)


WEB = frozenset({"web"})


def _op(
    name: str, handler: object, input: type[BaseModel], auth: Auth = Auth.NONE, effect: Effect = Effect.WRITE
) -> Operation:
    return web_op(name, handler, input, LinkOutcome, effect=effect, auth=auth)


VERIFY_EMAIL = _op("verify_email", verify_email, Link)
RESEND_VERIFICATION = _op("resend_verification", resend_verification, ByEmail)
FORGOT_PASSWORD = _op("forgot_password", forgot_password, ByEmail)
CHECK_RESET = _op("check_reset", check_reset, Link, effect=Effect.READ)
RESET_PASSWORD = _op("reset_password", reset_password, NewPassword)
CHANGE_EMAIL = _op("change_email", change_email, EmailChange, Auth.KEY)
CONFIRM_EMAIL = _op("confirm_email", confirm_email, Link)
register(
    VERIFY_EMAIL,
    RESEND_VERIFICATION,
    FORGOT_PASSWORD,
    CHECK_RESET,
    RESET_PASSWORD,
    CHANGE_EMAIL,
    CONFIRM_EMAIL,
)
