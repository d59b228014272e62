"""The writer of the OAuth tables (issue 31): stored clients, authorization requests, grants and tokens
(what each step means: domains/oauth/); the access token check's lone read (`read_alone`); and the deletes
of spent OAuth state (the statements of jobs/oauth_prune.py, which runs the passes and says what "spent"
means): authorization requests past their expiry, and tokens that can no longer be used (expired, revoked
access tokens, revoked refresh tokens of ended grants). Nothing here commits; changes of a loaded row
(a request answered, a client's document refreshed, a grant revoked) are the unit of work's."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable

from proxyplane.storage.engine import Database
from proxyplane.storage.models.oauth import OAuthClient, OAuthGrant, OAuthRequest, OAuthToken


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


def add_client(session: AsyncSession, client_id: str, kind: str, document: str) -> None:
    """A newly seen client's stored metadata (flushed with the caller's next flush)."""
    session.add(OAuthClient(client_id=client_id, kind=kind, document=document))


async def add_request(session: AsyncSession, row: OAuthRequest) -> None:
    """A new authorization request, flushed (its id is known)."""
    session.add(row)
    await session.flush()


async def add_grant(session: AsyncSession, grant: OAuthGrant) -> None:
    """A new grant, flushed (its id is known)."""
    session.add(grant)
    await session.flush()


async def add_tokens(session: AsyncSession, tokens: list[OAuthToken]) -> None:
    """New tokens (a grant's access and refresh pair), flushed."""
    for token in tokens:
        session.add(token)
    await session.flush()


async def claim_code(session: AsyncSession, code_hash: str, now: datetime) -> uuid.UUID | None:
    """Mark the request of this code used, once (a conditional UPDATE): its grant id, or None when the
    code is unknown or was used meanwhile."""
    claimed = (
        await session.execute(
            update(OAuthRequest)
            .where(OAuthRequest.code_hash == code_hash, OAuthRequest.used_at.is_(None))
            .values(used_at=now)
            .returning(OAuthRequest.grant_id)
            .execution_options(synchronize_session=False)
        )
    ).first()
    return None if claimed is None else claimed[0]


async def spend_refresh(session: AsyncSession, token_hash: str, now: datetime) -> uuid.UUID | None:
    """Revoke this live refresh token, once (a conditional UPDATE): its grant id, or None when it is
    unknown or was already spent."""
    spent = (
        await session.execute(
            update(OAuthToken)
            .where(
                OAuthToken.token_hash == token_hash,
                OAuthToken.kind == "refresh",
                OAuthToken.revoked_at.is_(None),
            )
            .values(revoked_at=now)
            .returning(OAuthToken.grant_id)
            .execution_options(synchronize_session=False)
        )
    ).first()
    return None if spent is None else spent[0]


async def revoke_grant_tokens(session: AsyncSession, grant_id: uuid.UUID, now: datetime) -> None:
    """Revoke every live token of the grant."""
    await session.execute(
        update(OAuthToken)
        .where(OAuthToken.grant_id == grant_id, OAuthToken.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
