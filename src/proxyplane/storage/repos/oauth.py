"""OAuth statements in storage (issue 31): the access token check's lone read (`read_alone`), and the
deletes of spent OAuth state (the statements of jobs/oauth_prune.py, which runs the passes and says what
"spent" means): authorization requests past their expiry, and tokens that can no longer be used (expired,
revoked access tokens, revoked refresh tokens of ended grants). The other OAuth rows are still written by
domains/oauth/ (listed in tests/test_storage_rules.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable

from proxyplane.storage.engine import Database
from proxyplane.storage.models.oauth import OAuthGrant, OAuthRequest, OAuthToken


async def read_alone(db: Database, stmt: Executable, params: dict[str, Any]) -> Any | None:
    """The first row of one read on its own connection (leaving ends its transaction); on PostgreSQL in
    autocommit, so no BEGIN/ROLLBACK round trips go around the one statement."""
    async with db.engine.connect() as conn:
        if not db.is_sqlite:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
        return (await conn.execute(stmt, params)).first()


def _spent_tokens(now: datetime) -> Select[Any]:
    ended_grants = select(OAuthGrant.id).where(OAuthGrant.revoked_at.is_not(None))
    return select(OAuthToken.token_hash).where(
        or_(
            OAuthToken.expires_at < now,
            and_(
                OAuthToken.revoked_at.is_not(None),
                or_(OAuthToken.kind == "access", OAuthToken.grant_id.in_(ended_grants)),
            ),
        )
    )


async def _delete_some(session: AsyncSession, ids_query: Select[Any], column: Any, batch: int) -> int:
    ids = (await session.execute(ids_query.limit(batch))).scalars().all()
    if ids:
        await session.execute(delete(column.table).where(column.in_(ids)))
    return len(ids)


async def prune_requests(session: AsyncSession, now: datetime, batch: int) -> int:
    """Delete up to `batch` requests past their expiry; how many."""
    spent = select(OAuthRequest.id).where(OAuthRequest.expires_at < now)
    return await _delete_some(session, spent, OAuthRequest.id, batch)


async def prune_tokens(session: AsyncSession, now: datetime, batch: int) -> int:
    """Delete up to `batch` tokens no one can use any more; how many."""
    return await _delete_some(session, _spent_tokens(now), OAuthToken.token_hash, batch)
