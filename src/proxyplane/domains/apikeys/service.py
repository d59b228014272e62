"""API keys: create (secret shown once, only its hash stored), list, revoke, authenticate, last use."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Forbidden, NotFound, ValidationFailed
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.core.security import API_KEY_PREFIX, hash_api_key, new_api_key
from proxyplane.domains.apikeys.cache import KeyPrincipal, drop_everywhere, key_cache
from proxyplane.domains.events.service import emit
from proxyplane.storage.engine import Database
from proxyplane.storage.models import ApiKey
from proxyplane.storage.repos import api_keys as key_rows

MAX_KEYS_PER_CUSTOMER = 100


async def create_key(
    session: AsyncSession,
    customer_id: int,
    name: str,
    scopes: frozenset[str],
    granted_by: frozenset[str] | None = None,
    confirm_spending: bool = False,
    prefix: str | None = None,
    member_id: int | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; `granted_by` is the creating key's scopes: a key cannot grant what it lacks.
    `prefix` replaces the shown prefix of the raw key (an OAuth grant's row, whose raw key is never used)."""
    unknown = sorted(scopes - ALL_SCOPES)
    if unknown:
        raise ValidationFailed(f"unknown scope(s): {', '.join(unknown)}", field="scopes")
    if granted_by is not None and not scopes <= granted_by:
        extra = sorted(scopes - granted_by)
        raise Forbidden(f"a key cannot grant scopes it does not hold: {', '.join(extra)}", scopes=extra)
    active = (
        await session.execute(
            select(ApiKey.id).where(ApiKey.customer_id == customer_id, ApiKey.revoked_at.is_(None))
        )
    ).all()
    if len(active) >= MAX_KEYS_PER_CUSTOMER:
        raise ValidationFailed(f"at most {MAX_KEYS_PER_CUSTOMER} active keys per account")
    raw = new_api_key()
    key = ApiKey(
        customer_id=customer_id,
        name=name.strip(),
        scopes=sorted(scopes),
        key_hash=hash_api_key(raw),
        prefix=prefix if prefix is not None else raw[: len(API_KEY_PREFIX) + 6],
        confirm_spending=confirm_spending,
        member_id=member_id,
    )
    await key_rows.add(session, key)
    await emit(session, customer_id, "api_key.created", _key_data(key))
    return key, raw


async def list_keys(session: AsyncSession, customer_id: int) -> list[ApiKey]:
    rows = await session.execute(
        select(ApiKey)
        .where(ApiKey.customer_id == customer_id, ApiKey.revoked_at.is_(None))
        .order_by(ApiKey.created_at.desc())
    )
    return list(rows.scalars())


async def revoke_key(session: AsyncSession, customer_id: int, key_id: uuid.UUID) -> ApiKey:
    key = await session.get(ApiKey, key_id)
    if key is None or key.customer_id != customer_id:
        raise NotFound(f"API key {key_id} not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.flush()
        # refused by this process from now on, and again once committed (a read in between is stale)
        drop_everywhere(key.id)
        event.listen(session.sync_session, "after_commit", lambda _s: drop_everywhere(key_id), once=True)
        await emit(session, customer_id, "api_key.revoked", _key_data(key))
    return key


async def authenticate(db: Database, raw: str, client_ip: str) -> KeyPrincipal | None:
    """The one key check shared by REST and MCP. Returns None for an unknown, revoked key or a
    disabled account. A valid key is remembered for CACHE_SECONDS (see cache.py for the bound); a miss
    reads the key: on PostgreSQL one statement outside any transaction, on SQLite in a short read unit
    of work. Nothing is written here: the last use is recorded by
    the request's own unit of work (`last_use_due` / `record_last_use`, called by invoke())."""
    if not raw.startswith(API_KEY_PREFIX) or len(raw) > 200:
        return None
    digest = hash_api_key(raw)
    cache = key_cache(db)
    principal = cache.get(digest)
    if principal is not None:
        return principal
    generation = cache.generation
    row = await key_rows.read_by_digest(db, digest)  # PostgreSQL: one round trip, no unit of work
    if row is None:
        return None
    key_id, customer_id, scopes, revoked_at, last_used_at, last_used_ip, confirm, status, member_id = row
    if isinstance(scopes, str):  # JSON text from a driver without the JSON codec
        scopes = json.loads(scopes)
    if last_used_at is not None:  # as UTCDateTime gives it through the session
        last_used_at = last_used_at.astimezone(UTC)
    if revoked_at is not None or status != "active":
        return None
    principal = KeyPrincipal(
        key_id=key_id,
        customer_id=customer_id,
        scopes=frozenset(scopes),
        confirm_spending=bool(confirm),
        member_id=member_id,
    )
    cache.put(digest, principal, generation, (last_used_at, last_used_ip))
    return principal


def last_use_due(db: Database, key_id: uuid.UUID | None, client_ip: str, now: datetime) -> bool:
    """Whether this request must record its key's last use (and claims it: see KeyCache.claim_use)."""
    return key_id is not None and key_cache(db).claim_use(key_id, client_ip, now)


async def record_last_use(session: AsyncSession, key_id: uuid.UUID, client_ip: str, now: datetime) -> None:
    """The key's last use, one UPDATE in the caller's transaction (committed with it, or not at all)."""
    await key_rows.touch(session, key_id, client_ip, now)


def _key_data(key: ApiKey) -> dict[str, object]:
    return {"key_id": str(key.id), "name": key.name, "scopes": list(key.scopes), "prefix": key.prefix}
