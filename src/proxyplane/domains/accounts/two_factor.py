"""Two-factor sign-in (issue 34): a TOTP secret (core/totp.py) confirmed by a first code, 10 single-use
recovery codes, the second step of a dashboard sign-in (which the OAuth consent page's sign-in goes
through too), and app passwords: once two-factor is on, the legacy Basic API and scripts take an app
password the customer created, never the main password.

The second step: a right password with two-factor on opens no session; it answers a signed pending
token (customer, expiry in 5 minutes, bound to the password hash) that the code form sends back. Wrong
codes are throttled by the shared throttle (domains/accounts/throttle.py) on two keys: the account over all
addresses (TOTP_CODE: a burst of 5, then one try a minute) and the address over all accounts (TOTP_ADDRESS:
10, then one every 30 s)."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core import totp
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.security import sign, verify_signature
from proxyplane.domains.accounts import logins, throttle
from proxyplane.domains.accounts.recovery import notice
from proxyplane.domains.accounts.service import get_customer
from proxyplane.domains.accounts.web_ops import Signed, open_session
from proxyplane.ops import Auth, Context, Effect, Operation, register, web_op
from proxyplane.storage.models import Customer
from proxyplane.storage.models.account_security import AppPassword, RecoveryCode, TwoFactor
from proxyplane.storage.repos import account_security as repo

PENDING_SECONDS = 300
ISSUER = "ProxyPlane"
APP_PASSWORD_PREFIX = "ppa-"
MAX_APP_PASSWORDS = 20


async def enabled(session: AsyncSession, customer_id: int) -> TwoFactor | None:
    row = await session.get(TwoFactor, customer_id)
    return row if row is not None and row.enabled_at is not None else None


def pending_token(secret_key: str, customer: Customer, now: datetime) -> str:
    expires = int(now.timestamp()) + PENDING_SECONDS
    mac = sign(secret_key, f"2fa:{customer.id}:{expires}:{customer.password_hash}".encode())
    return f"{customer.id}.{expires}.{mac}"


async def read_pending(session: AsyncSession, secret_key: str, token: str, now: datetime) -> Customer | None:
    parts = token.split(".")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    if int(parts[1]) < now.timestamp():
        return None
    customer = await session.get(Customer, int(parts[0]))
    if customer is None or customer.status != "active":
        return None
    message = f"2fa:{customer.id}:{parts[1]}:{customer.password_hash}".encode()
    return customer if verify_signature(secret_key, message, parts[2]) else None


async def check_code(ctx: Context, customer_id: int, code: str) -> bool:
    """A TOTP code (each time step once) or an unused recovery code."""
    row = await enabled(ctx.session, customer_id)
    if row is None:
        return False
    secret = ctx.platform.secrets.decrypt(row.secret_encrypted)
    step = totp.verify(secret, code, last_step=row.last_step)
    if step is not None:
        return await repo.accept_step(ctx.session, customer_id, step, None)
    if any(c.isalpha() for c in code):
        return await repo.use_recovery_code(ctx.session, customer_id, totp.recovery_hash(code), utcnow())
    return False


def code_keys(customer_id: int, client_ip: str) -> list[throttle.Key]:
    """The account over every address (5, then one a minute) and the address over every account (10, then
    one every 30 s): a code guesser is slowed on whichever it exhausts first."""
    return [
        throttle.Key(throttle.TOTP_CODE, f"customer:{customer_id}"),
        throttle.Key(throttle.TOTP_ADDRESS, throttle.address_subject(client_ip)),
    ]


async def guarded_code(ctx: Context, customer_id: int, code: str) -> str:
    """ok | wrong | throttled: check_code behind the throttle (a wrong code counts; the caller commits)."""
    keys = code_keys(customer_id, ctx.caller.client_ip)
    if not (await throttle.check(ctx.session, keys)).allowed:
        return "throttled"
    if not await check_code(ctx, customer_id, code):
        await throttle.record_failure(ctx.session, keys)
        return "wrong"
    await throttle.record_success(ctx.session, keys)
    return "ok"


class Empty(BaseModel):
    pass


class Code(BaseModel):
    code: str = Field(max_length=40)


class CodeSignIn(Code):
    pending: str = Field(max_length=300)


class Disable(Code):
    current_password: str = Field(max_length=200)


class Setup(BaseModel):
    secret: str
    uri: str
    qr_svg: str


class Codes(BaseModel):
    outcome: str = Field(default="ok", description="ok | wrong | throttled (then no codes)")
    recovery_codes: list[str] = Field(default_factory=list)


class AppPasswordInfo(BaseModel):
    id: uuid.UUID
    name: str
    created_at: datetime
    last_used_at: datetime | None


class Status(BaseModel):
    """The Security page's state: the address (and whether it is confirmed), two-factor, app passwords."""

    email: str
    email_verified: bool
    enabled: bool
    outcome: str = Field(
        default="ok",
        description="of a code-checked change: ok | wrong | throttled; of the current password: "
        "wrong_password | password_throttled",
    )
    recovery_codes_left: int
    app_passwords: list[AppPasswordInfo]


class NewAppPassword(BaseModel):
    name: str = Field(min_length=1, max_length=100)


class CreatedAppPassword(AppPasswordInfo):
    password: str = Field(description="shown once")


class AppPasswordRef(BaseModel):
    id: uuid.UUID


async def status(ctx: Context, _: Empty) -> Status:
    customer = await get_customer(ctx.session, ctx.customer_id)
    on = await enabled(ctx.session, ctx.customer_id) is not None
    left = select(func.count()).where(
        RecoveryCode.customer_id == ctx.customer_id, RecoveryCode.used_at.is_(None)
    )
    rows = await ctx.session.execute(
        select(AppPassword)
        .where(AppPassword.customer_id == ctx.customer_id, AppPassword.revoked_at.is_(None))
        .order_by(AppPassword.created_at)
    )
    return Status(
        email=customer.email,
        email_verified=customer.email_verified_at is not None,
        enabled=on,
        recovery_codes_left=int((await ctx.session.execute(left)).scalar_one()) if on else 0,
        app_passwords=[
            AppPasswordInfo(id=a.id, name=a.name, created_at=a.created_at, last_used_at=a.last_used_at)
            for a in rows.scalars()
        ],
    )


async def setup(ctx: Context, _: Empty) -> Setup:
    if await enabled(ctx.session, ctx.customer_id) is not None:
        raise Conflict("two-factor sign-in is already on; turn it off first to change the authenticator")
    customer = await get_customer(ctx.session, ctx.customer_id)
    secret = totp.new_secret()
    await repo.begin_two_factor(ctx.session, customer.id, ctx.platform.secrets.encrypt(secret), utcnow())
    uri = totp.provisioning_uri(secret, customer.email, ISSUER)
    return Setup(secret=secret, uri=uri, qr_svg=totp.qr_svg(uri))


async def _new_codes(ctx: Context) -> Codes:
    codes = totp.new_recovery_codes()
    await repo.replace_recovery_codes(ctx.session, ctx.customer_id, [totp.recovery_hash(c) for c in codes])
    return Codes(recovery_codes=codes)


async def enable(ctx: Context, data: Code) -> Codes:
    """The first code from the authenticator turns two-factor on; the recovery codes are shown once."""
    row = await ctx.session.get(TwoFactor, ctx.customer_id)
    if row is None or row.enabled_at is not None:
        raise Conflict("start the set-up first (or two-factor sign-in is already on)")
    step = totp.verify(ctx.platform.secrets.decrypt(row.secret_encrypted), data.code)
    if step is None or not await repo.accept_step(ctx.session, ctx.customer_id, step, utcnow()):
        raise ValidationFailed(
            "that code is not right: check the authenticator's time and try the next code", field="code"
        )
    customer = await get_customer(ctx.session, ctx.customer_id)
    await notice(
        ctx.session,
        ctx.platform,
        customer.id,
        customer.email,
        "Two-factor sign-in is on",
        [
            "Signing in to your ProxyPlane dashboard now asks for a code from your authenticator app.",
            "The legacy API and scripts need an app password from now on (Security page), not your password.",
        ],
    )
    return await _new_codes(ctx)


async def new_recovery_codes(ctx: Context, data: Code) -> Codes:
    """A wrong code is an answer (its throttle count commits), not an error."""
    outcome = await guarded_code(ctx, ctx.customer_id, data.code)
    return await _new_codes(ctx) if outcome == "ok" else Codes(outcome=outcome)


async def disable(ctx: Context, data: Disable) -> Status:
    customer = await get_customer(ctx.session, ctx.customer_id)
    checked = await logins.current_password(
        ctx.session, customer, data.current_password, ctx.caller.client_ip
    )
    if checked != "ok":  # an answer, not an error: the throttle's count commits
        outcome = "wrong_password" if checked == "wrong" else "password_throttled"
        return (await status(ctx, Empty())).model_copy(update={"outcome": outcome})
    outcome = await guarded_code(ctx, customer.id, data.code)
    if outcome != "ok":  # an answer, not an error: the throttle's count commits
        return (await status(ctx, Empty())).model_copy(update={"outcome": outcome})
    await repo.end_two_factor(ctx.session, customer.id)
    await notice(
        ctx.session,
        ctx.platform,
        customer.id,
        customer.email,
        "Two-factor sign-in is off",
        [
            "Signing in to your ProxyPlane dashboard asks for your password only now.",
            "If this was not you, reset your password at once.",
        ],
    )
    return await status(ctx, Empty())


async def sign_in_code(ctx: Context, data: CodeSignIn) -> Signed:
    """The second step of a sign-in: a right code opens the session."""
    from proxyplane.domains.accounts.sign_in_mail import after_sign_in

    ip, agent = ctx.caller.client_ip, ctx.caller.user_agent
    customer = await read_pending(ctx.session, ctx.platform.secret_key, data.pending, utcnow())
    if customer is None:
        return Signed(outcome="expired")
    outcome = await guarded_code(ctx, customer.id, data.code)
    if outcome != "ok":
        return Signed(outcome=outcome)
    token = await open_session(ctx.session, customer.id, ip, agent)
    await after_sign_in(ctx.session, ctx.platform, customer, ip, agent)
    return Signed(outcome="ok", customer_id=customer.id, token=token)


def app_password_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


async def create_app_password(ctx: Context, data: NewAppPassword) -> CreatedAppPassword:
    count = select(func.count()).where(
        AppPassword.customer_id == ctx.customer_id, AppPassword.revoked_at.is_(None)
    )
    if int((await ctx.session.execute(count)).scalar_one()) >= MAX_APP_PASSWORDS:
        raise ValidationFailed(f"at most {MAX_APP_PASSWORDS} app passwords; revoke one first")
    raw = APP_PASSWORD_PREFIX + secrets.token_urlsafe(24)
    row = await repo.add_app_password(
        ctx.session, ctx.customer_id, data.name.strip(), app_password_hash(raw), utcnow()
    )
    return CreatedAppPassword(
        id=row.id, name=row.name, created_at=row.created_at, last_used_at=None, password=raw
    )


async def revoke_app_password(ctx: Context, data: AppPasswordRef) -> Status:
    if not await repo.revoke_app_password(ctx.session, ctx.customer_id, data.id, utcnow()):
        raise NotFound("no such app password")
    return await status(ctx, Empty())


async def legacy_password(session: AsyncSession, customer: Customer, password: str) -> bool | None:
    """The legacy Basic check with two-factor on: True for one of the customer's app passwords, False
    otherwise (the main password too); None when two-factor is off (the main password decides)."""
    if await enabled(session, customer.id) is None:
        return None
    if not password.startswith(APP_PASSWORD_PREFIX):
        return False
    row = (
        await session.execute(
            select(AppPassword).where(
                AppPassword.customer_id == customer.id,
                AppPassword.secret_hash == app_password_hash(password),
                AppPassword.revoked_at.is_(None),
            )
        )
    ).scalar_one_or_none()
    if row is None:
        return False
    await repo.touch_app_password(session, row.id, utcnow())
    return True


def _op(
    name: str,
    handler: object,
    input: type[BaseModel],
    output: type[BaseModel],
    auth: Auth = Auth.KEY,
    effect: Effect = Effect.WRITE,
) -> Operation:
    return web_op(name, handler, input, output, effect=effect, auth=auth)


STATUS = _op("two_factor_status", status, Empty, Status, effect=Effect.READ)
SETUP = _op("two_factor_setup", setup, Empty, Setup)
ENABLE = _op("two_factor_enable", enable, Code, Codes)
NEW_CODES = _op("two_factor_recovery_codes", new_recovery_codes, Code, Codes)
DISABLE = _op("two_factor_disable", disable, Disable, Status)
SIGN_IN_CODE = _op("sign_in_code", sign_in_code, CodeSignIn, Signed, Auth.NONE)
CREATE_APP_PASSWORD = _op("create_app_password", create_app_password, NewAppPassword, CreatedAppPassword)
REVOKE_APP_PASSWORD = _op("revoke_app_password", revoke_app_password, AppPasswordRef, Status)
register(STATUS, SETUP, ENABLE, NEW_CODES, DISABLE, SIGN_IN_CODE, CREATE_APP_PASSWORD, REVOKE_APP_PASSWORD)
