"""Purge of spent OAuth state (issue 21.2): authorization requests past their expiry (unanswered, denied,
or whose single-use code was exchanged or expired: a request lives CONSENT_SECONDS, its code
CODE_SECONDS) and tokens that can no longer be used: expired ones, revoked access tokens, and revoked
refresh tokens of ended grants. A rotated (revoked) refresh token of a live grant is kept until it
expires: presenting it again ends the grant (reuse detection). Grants themselves stay (the dashboard and
the key row's usage refer to them). Run by the renewal job's pass after the idempotency prune, in batches
of bounded size, each in its own transaction; a large backlog is worked off over several passes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, or_, select

from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.models.oauth import OAuthGrant, OAuthRequest, OAuthToken

BATCH = 1000
MAX_BATCHES = 20  # per table and pass


async def prune_oauth(db: Database, now: datetime | None = None, batch: int = BATCH) -> int:
    """Delete the requests and tokens no one can use any more; the number of rows deleted."""
    now = now or utcnow()
    requests = select(OAuthRequest.id).where(OAuthRequest.expires_at < now)
    ended_grants = select(OAuthGrant.id).where(OAuthGrant.revoked_at.is_not(None))
    tokens = select(OAuthToken.token_hash).where(
        or_(
            OAuthToken.expires_at < now,
            and_(
                OAuthToken.revoked_at.is_not(None),
                or_(OAuthToken.kind == "access", OAuthToken.grant_id.in_(ended_grants)),
            ),
        )
    )
    return await _in_batches(db, requests, OAuthRequest.id, batch) + await _in_batches(
        db, tokens, OAuthToken.token_hash, batch
    )


async def _in_batches(db: Database, ids_query: Select[Any], column: Any, batch: int) -> int:
    deleted = 0
    for _ in range(MAX_BATCHES):
        async with db.unit_of_work() as uow:
            ids = (await uow.session.execute(ids_query.limit(batch))).scalars().all()
            if not ids:
                break
            await uow.session.execute(delete(column.table).where(column.in_(ids)))
            await uow.commit()
        deleted += len(ids)
        if len(ids) < batch:
            break
    return deleted
