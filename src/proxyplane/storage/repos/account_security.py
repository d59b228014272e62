"""The one writer of `account_tokens`, `customer_two_factor`, `customer_recovery_codes` and
`app_passwords` (issue 34). Async functions over the caller's session; nothing here commits."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.account_security import AccountToken, AppPassword, RecoveryCode, TwoFactor
from proxyplane.storage.rowcount import rowcount


def digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


async def new_token(
    session: AsyncSession, customer_id: int, purpose: str, email: str, now: datetime, lifetime: timedelta
) -> str:
    """A new single-use link token (returned once; only its hash is stored)."""
    raw = secrets.token_urlsafe(32)
    session.add(
        AccountToken(
            id=digest(raw),
            customer_id=customer_id,
            purpose=purpose,
            email=email,
            created_at=now,
            expires_at=now + lifetime,
        )
    )
    await session.flush()
    return raw


async def use_token(session: AsyncSession, token_id: str, now: datetime) -> bool:
    """Mark a token used, if it is still unused and unexpired (one statement: of two clicks racing, one
    wins)."""
    moved = await session.execute(
        update(AccountToken)
        .where(AccountToken.id == token_id, AccountToken.used_at.is_(None), AccountToken.expires_at > now)
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def void_tokens(session: AsyncSession, customer_id: int, purpose: str, now: datetime) -> None:
    """Every unused token of this purpose stops working (a reset done, an address changed)."""
    await session.execute(
        update(AccountToken)
        .where(
            AccountToken.customer_id == customer_id,
            AccountToken.purpose == purpose,
            AccountToken.used_at.is_(None),
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )


async def begin_two_factor(
    session: AsyncSession, customer_id: int, secret_encrypted: str, now: datetime
) -> None:
    """A new secret being set up (replaces an unconfirmed one; never an enabled one: the caller checks)."""
    await session.execute(
        delete(TwoFactor).where(TwoFactor.customer_id == customer_id, TwoFactor.enabled_at.is_(None))
    )
    session.add(TwoFactor(customer_id=customer_id, secret_encrypted=secret_encrypted, created_at=now))
    await session.flush()


async def accept_step(session: AsyncSession, customer_id: int, step: int, enable_at: datetime | None) -> bool:
    """Record an accepted TOTP time step if it is newer than the last (a code works once); with
    `enable_at`, also turn two-factor on. False when another sign-in used this step first."""
    values: dict[str, object] = {"last_step": step}
    if enable_at is not None:
        values["enabled_at"] = enable_at
    moved = await session.execute(
        update(TwoFactor)
        .where(
            TwoFactor.customer_id == customer_id,
            (TwoFactor.last_step.is_(None)) | (TwoFactor.last_step < step),
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def end_two_factor(session: AsyncSession, customer_id: int) -> None:
    await session.execute(delete(TwoFactor).where(TwoFactor.customer_id == customer_id))
    await session.execute(delete(RecoveryCode).where(RecoveryCode.customer_id == customer_id))


async def replace_recovery_codes(session: AsyncSession, customer_id: int, hashes: Sequence[str]) -> None:
    await session.execute(delete(RecoveryCode).where(RecoveryCode.customer_id == customer_id))
    session.add_all(RecoveryCode(customer_id=customer_id, code_hash=h) for h in hashes)
    await session.flush()


async def use_recovery_code(session: AsyncSession, customer_id: int, code_hash: str, now: datetime) -> bool:
    moved = await session.execute(
        update(RecoveryCode)
        .where(
            RecoveryCode.customer_id == customer_id,
            RecoveryCode.code_hash == code_hash,
            RecoveryCode.used_at.is_(None),
        )
        .values(used_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def add_app_password(
    session: AsyncSession, customer_id: int, name: str, secret_hash: str, now: datetime
) -> AppPassword:
    row = AppPassword(
        id=uuid.uuid4(), customer_id=customer_id, name=name, secret_hash=secret_hash, created_at=now
    )
    session.add(row)
    await session.flush()
    return row


async def revoke_app_password(
    session: AsyncSession, customer_id: int, password_id: uuid.UUID, now: datetime
) -> bool:
    moved = await session.execute(
        update(AppPassword)
        .where(
            AppPassword.id == password_id,
            AppPassword.customer_id == customer_id,
            AppPassword.revoked_at.is_(None),
        )
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1


async def touch_app_password(session: AsyncSession, password_id: uuid.UUID, now: datetime) -> None:
    await session.execute(
        update(AppPassword)
        .where(AppPassword.id == password_id)
        .values(last_used_at=now)
        .execution_options(synchronize_session=False)
    )
