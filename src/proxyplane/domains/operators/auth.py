"""Who an operator request comes from (issue 33): the console's session cookie or an operator API key.
Reads only, in a short read unit of work of their own (as apikeys.authenticate does for customers'
keys): an auth look-up comes before any operation can run. A locked operator, a revoked or expired
session, a revoked key, or a key whose role is now wider than its operator's, is nobody."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.domains.operators.roles import within
from proxyplane.domains.operators.service import KEY_PREFIX, token_hash
from proxyplane.storage.engine import Database
from proxyplane.storage.models.operators import Operator, OperatorApiKey, OperatorSession


@dataclass(frozen=True)
class OperatorPrincipal:
    operator_id: int
    email: str
    role: str
    session_id: str = ""  # console only
    stage: str = "full"  # console: enrol | totp | full
    csrf_token: str = ""
    one_time_password: bool = False


async def by_key(db: Database, raw: str) -> OperatorPrincipal | None:
    if not raw.startswith(KEY_PREFIX) or len(raw) > 200:
        return None
    async with db.unit_of_work(write=False) as uow:
        row = (
            await uow.session.execute(
                select(OperatorApiKey, Operator)
                .join(Operator, Operator.id == OperatorApiKey.operator_id)
                .where(OperatorApiKey.digest == token_hash(raw))
            )
        ).first()
    if row is None:
        return None
    key, operator = row
    if key.revoked_at is not None or operator.status != "active" or not within(key.role, operator.role):
        return None
    return OperatorPrincipal(operator.id, operator.email, key.role)


async def by_session(db: Database, token: str) -> OperatorPrincipal | None:
    if not token or len(token) > 200:
        return None
    async with db.unit_of_work(write=False) as uow:
        row = (
            await uow.session.execute(
                select(OperatorSession, Operator)
                .join(Operator, Operator.id == OperatorSession.operator_id)
                .where(OperatorSession.id == token_hash(token))
            )
        ).first()
    if row is None:
        return None
    found, operator = row
    if found.revoked_at is not None or found.expires_at <= utcnow() or operator.status != "active":
        return None
    return OperatorPrincipal(
        operator.id,
        operator.email,
        operator.role,
        session_id=found.id,
        stage=found.stage,
        csrf_token=found.csrf_token,
        one_time_password=operator.one_time_password,
    )
