"""Every write of the operator tables (issue 33): operators, their console sessions and API keys, and the
audit log (insert only: the table refuses UPDATE and DELETE). Nothing here commits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.operators import (
    Operator,
    OperatorApiKey,
    OperatorAudit,
    OperatorSession,
)
from proxyplane.storage.rowcount import rowcount


async def add_operator(session: AsyncSession, email: str, role: str, password_hash: str) -> Operator:
    now = utcnow()
    row = Operator(
        email=email,
        role=role,
        status="active",
        password_hash=password_hash,
        one_time_password=True,
        recovery_hashes=[],
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def set_operator(session: AsyncSession, operator: Operator, **values: Any) -> None:
    """Change an operator's columns (role, status, password_hash, totp_secret, totp_last_step ...)."""
    for name, value in values.items():
        setattr(operator, name, value)
    operator.updated_at = utcnow()
    await session.flush()


async def add_session(
    session: AsyncSession,
    session_id: str,
    operator_id: int,
    stage: str,
    csrf_token: str,
    client_ip: str,
    user_agent: str,
    expires_at: datetime,
) -> OperatorSession:
    now = utcnow()
    row = OperatorSession(
        id=session_id,
        operator_id=operator_id,
        stage=stage,
        csrf_token=csrf_token,
        client_ip=client_ip[:45],
        user_agent=user_agent[:300],
        created_at=now,
        last_seen_at=now,
        expires_at=expires_at,
    )
    session.add(row)
    await session.flush()
    return row


async def set_session(session: AsyncSession, row: OperatorSession, **values: Any) -> None:
    for name, value in values.items():
        setattr(row, name, value)
    await session.flush()


async def revoke_sessions(session: AsyncSession, operator_id: int, only: str | None = None) -> int:
    stmt = update(OperatorSession).where(
        OperatorSession.operator_id == operator_id, OperatorSession.revoked_at.is_(None)
    )
    if only is not None:
        stmt = stmt.where(OperatorSession.id == only)
    done = await session.execute(stmt.values(revoked_at=utcnow()))
    return rowcount(done)


async def add_key(
    session: AsyncSession, operator_id: int, name: str, role: str, digest: str
) -> OperatorApiKey:
    row = OperatorApiKey(operator_id=operator_id, name=name, role=role, digest=digest, created_at=utcnow())
    session.add(row)
    await session.flush()
    return row


async def revoke_keys(session: AsyncSession, operator_id: int) -> None:
    await session.execute(
        update(OperatorApiKey)
        .where(OperatorApiKey.operator_id == operator_id, OperatorApiKey.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )


async def append_audit(
    session: AsyncSession,
    *,
    operator_id: int | None,
    actor: str,
    role: str,
    door: str,
    action: str,
    target: str,
    before: Any,
    after: Any,
    detail: Any,
    client_ip: str,
    form_key: str | None = None,
    outcome: str = "ok",
) -> OperatorAudit:
    row = OperatorAudit(
        at=utcnow(),
        operator_id=operator_id,
        actor=actor[:320],
        role=role,
        door=door,
        action=action,
        target=target[:200],
        before=before,
        after=after,
        detail=detail,
        client_ip=client_ip[:45],
        form_key=form_key,
        outcome=outcome,
    )
    session.add(row)
    await session.flush()
    return row
