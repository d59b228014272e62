"""Operator accounts (issue 33): creation with a one-time password, sign-in (password, then TOTP or a
recovery code; enrolment at the first sign-in), sessions, operator API keys, the last-owner guard.
Throttling is the shared one (domains/accounts/throttle.py, issue 30): the password on
password_keys("operator:<email>", address), every code on the operator's TOTP_CODE key. Writes go through
storage/repos/operators.py (and the throttle's repo); nothing here commits."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core import totp
from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.security import SecretBox, hash_password, verify_password
from proxyplane.domains.accounts import throttle
from proxyplane.domains.operators.roles import OWNER, RESELLER, ROLES, within
from proxyplane.storage.models.operators import Operator, OperatorApiKey, OperatorSession
from proxyplane.storage.repos import operators as repo

SESSION_LIFETIME = timedelta(hours=12)
KEY_PREFIX = "ppo_"
ISSUER = "ProxyPlane operators"
_DUMMY_HASH = hash_password("not-a-real-password-" + secrets.token_hex(8))


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normal_email(email: str) -> str:
    return email.strip().lower()[:320]


async def by_email(session: AsyncSession, email: str) -> Operator | None:
    found = await session.execute(select(Operator).where(Operator.email == normal_email(email)))
    return found.scalar_one_or_none()


async def require_by_email(session: AsyncSession, email: str) -> Operator:
    row = await by_email(session, email)
    if row is None:
        raise NotFound(f"no operator with the email {email!r}")
    return row


def check_role(role: str) -> None:
    if role not in ROLES:
        raise ValidationFailed(f"role must be one of {', '.join(ROLES)}", field="role")


async def create(
    session: AsyncSession, email: str, role: str, *, reseller: bool = False
) -> tuple[Operator, str]:
    """A new operator and its one-time password (printed once; replaced at the first sign-in). A reseller
    is made by operator_reseller_create only (`reseller`), with its price and wallet."""
    check_role(role)
    if (role == RESELLER) != reseller:
        raise ValidationFailed("a reseller is created with operator_reseller_create", field="role")
    email = normal_email(email)
    if "@" not in email:
        raise ValidationFailed("email must be an email address", field="email")
    if await by_email(session, email) is not None:
        raise Conflict(f"an operator with the email {email!r} exists")
    password = secrets.token_urlsafe(12)
    return await repo.add_operator(session, email, role, hash_password(password)), password


async def active_owners(session: AsyncSession) -> int:
    found = await session.execute(
        select(func.count()).select_from(Operator).where(Operator.role == OWNER, Operator.status == "active")
    )
    return int(found.scalar_one())


async def _keep_an_owner(session: AsyncSession, target: Operator) -> None:
    if target.role == OWNER and target.status == "active" and await active_owners(session) <= 1:
        raise Conflict(f"{target.email} is the last active owner: make another owner first")


async def set_role(session: AsyncSession, target: Operator, role: str) -> None:
    check_role(role)
    if (role == RESELLER) != (target.role == RESELLER):
        raise Conflict("a reseller stays a reseller (its customers are bound to it); no one becomes one")
    if role != OWNER:
        await _keep_an_owner(session, target)
    await repo.set_operator(session, target, role=role)


async def lock(session: AsyncSession, target: Operator) -> None:
    """Lock an operator out: sessions and API keys end at once. The last active owner cannot be locked."""
    await _keep_an_owner(session, target)
    await repo.set_operator(session, target, status="locked")
    await repo.revoke_sessions(session, target.id)
    await repo.revoke_keys(session, target.id)


async def unlock(session: AsyncSession, target: Operator) -> None:
    await repo.set_operator(session, target, status="active")


# --- sign-in ---------------------------------------------------------------------------------------


def password_keys(email: str, client_ip: str) -> list[throttle.Key]:
    return throttle.password_keys("operator:" + normal_email(email), client_ip)


def code_keys(operator: Operator) -> list[throttle.Key]:
    return [throttle.Key(throttle.TOTP_CODE, f"operator:{operator.id}")]


async def throttled(session: AsyncSession, email: str, client_ip: str) -> bool:
    """Too many recent wrong passwords for this operator from this address (or overall)."""
    return not (await throttle.check(session, password_keys(email, client_ip))).allowed


async def code_throttled(session: AsyncSession, operator: Operator) -> bool:
    """Too many recent wrong codes for this operator (5, then one a minute)."""
    return not (await throttle.check(session, code_keys(operator))).allowed


async def check_password(
    session: AsyncSession, email: str, password: str, client_ip: str
) -> tuple[Operator | None, str]:
    """(the operator, "ok") for the right password of an active operator; else (the operator named, if
    any, "wrong" or "locked": the right password of a locked one). The caller answers "wrong" to both."""
    row = await by_email(session, email)
    ok = verify_password(row.password_hash if row else _DUMMY_HASH, password)
    if not ok or row is None or row.status != "active":
        await throttle.record_failure(session, password_keys(email, client_ip))
        return row, "locked" if ok and row is not None else "wrong"
    await throttle.record_success(session, password_keys(email, client_ip))
    return row, "ok"


async def open_session(
    session: AsyncSession, operator: Operator, client_ip: str, user_agent: str
) -> tuple[OperatorSession, str]:
    """A session at its first stage: "enrol" when TOTP is not set up yet, else "totp"."""
    token = secrets.token_urlsafe(32)
    stage = "totp" if operator.totp_secret else "enrol"
    row = await repo.add_session(
        session,
        token_hash(token),
        operator.id,
        stage,
        secrets.token_urlsafe(32),
        client_ip,
        user_agent,
        utcnow() + SESSION_LIFETIME,
    )
    return row, token


async def start_enrolment(
    session: AsyncSession, box: SecretBox, row: OperatorSession, operator: Operator
) -> str:
    """The pending TOTP secret of this enrolment (made once per session); returns the otpauth URI."""
    if row.pending_secret is None:
        await repo.set_session(session, row, pending_secret=box.encrypt(totp.new_secret()))
    assert row.pending_secret is not None
    return totp.provisioning_uri(box.decrypt(row.pending_secret), operator.email, ISSUER)


async def finish_enrolment(
    session: AsyncSession, box: SecretBox, row: OperatorSession, operator: Operator, code: str, password: str
) -> list[str] | None:
    """Check the first code against the pending secret and set the operator's own password; returns the
    recovery codes (shown once), or None for a wrong code."""
    if row.stage != "enrol" or row.pending_secret is None:
        raise Conflict("no enrolment in progress for this session")
    if len(password) < 12:
        raise ValidationFailed("the new password needs at least 12 characters", field="password")
    secret = box.decrypt(row.pending_secret)
    step = totp.verify(secret, code)
    if step is None:
        await throttle.record_failure(session, code_keys(operator))
        return None
    await throttle.record_success(session, code_keys(operator))
    codes = totp.new_recovery_codes()
    await repo.set_operator(
        session,
        operator,
        totp_secret=row.pending_secret,
        totp_last_step=step,
        recovery_hashes=[totp.recovery_hash(c) for c in codes],
        password_hash=hash_password(password),
        one_time_password=False,
    )
    await repo.set_session(session, row, stage="full", pending_secret=None)
    return codes


async def second_factor(
    session: AsyncSession, box: SecretBox, row: OperatorSession, operator: Operator, code: str
) -> bool:
    """A TOTP code (each accepted once) or an unused recovery code (then spent) completes the sign-in."""
    if row.stage != "totp" or operator.totp_secret is None:
        raise Conflict("no code is due for this session")
    step = totp.verify(box.decrypt(operator.totp_secret), code, last_step=operator.totp_last_step)
    if step is not None:
        await repo.set_operator(session, operator, totp_last_step=step)
    else:
        digest = totp.recovery_hash(code)
        if digest not in operator.recovery_hashes:
            await throttle.record_failure(session, code_keys(operator))
            return False
        await repo.set_operator(
            session, operator, recovery_hashes=[h for h in operator.recovery_hashes if h != digest]
        )
    await throttle.record_success(session, code_keys(operator))
    await repo.set_session(session, row, stage="full")
    return True


async def sessions_of(session: AsyncSession, operator_id: int) -> list[OperatorSession]:
    found = await session.execute(
        select(OperatorSession)
        .where(
            OperatorSession.operator_id == operator_id,
            OperatorSession.revoked_at.is_(None),
            OperatorSession.expires_at > utcnow(),
        )
        .order_by(OperatorSession.created_at.desc())
    )
    return list(found.scalars().all())


# --- operator API keys -----------------------------------------------------------------------------


async def create_key(
    session: AsyncSession, operator: Operator, name: str, role: str
) -> tuple[OperatorApiKey, str]:
    """A key bound to `role`, which may not exceed the operator's own role."""
    check_role(role)
    if not within(role, operator.role):
        raise ValidationFailed(f"a key of {operator.email} cannot have the wider role {role}", field="role")
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    return await repo.add_key(session, operator.id, name[:100], role, token_hash(raw)), raw
