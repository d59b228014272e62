"""The key check reads a key once per CACHE_SECONDS and records its last use in the request's own
unit of work (one transaction per request); a revocation through this process is refused at once, one
through another process (another Database) within CACHE_SECONDS."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import event, select

from proxyplane.core.clock import utcnow
from proxyplane.domains.apikeys import cache as key_cache_module
from proxyplane.domains.apikeys.cache import KeyCache, KeyPrincipal
from proxyplane.domains.apikeys.service import authenticate, revoke_key
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.models import ApiKey
from tests.support import bearer, make_account

pytestmark = pytest.mark.anyio
BALANCE = "/api/v1/customer/wallet/balance"


@contextmanager
def statements(platform: Platform) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(" ".join(statement.split()))

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


def _reads_key(seen: list[str]) -> bool:
    return any(s.upper().startswith("SELECT") and "FROM api_keys" in s for s in seen)


def _writes_key(seen: list[str]) -> bool:
    return any(s.startswith("UPDATE api_keys") for s in seen)


async def test_a_known_key_is_read_once_and_its_last_use_written_with_the_request(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    account = await make_account(platform)
    key = await account.key({"wallet:read"})
    with statements(platform) as first:
        assert (await client.get(BALANCE, headers=bearer(key))).status_code == 200
    with statements(platform) as second:
        assert (await client.get(BALANCE, headers=bearer(key))).status_code == 200
    assert _reads_key(first) and _writes_key(first)
    # the first request: its key's last use is written in the request's own transaction, the only one
    # after the key read (no unit of work of its own for the write)
    after_read = first[next(i for i, s in enumerate(first) if "FROM api_keys" in s) + 1 :]
    assert sum(s.upper() in ("BEGIN", "BEGIN IMMEDIATE") for s in after_read) <= 1, after_read
    assert not _reads_key(second) and not _writes_key(second), second
    async with platform.db.unit_of_work(write=False) as uow:
        used_at, used_ip = (
            await uow.session.execute(
                select(ApiKey.last_used_at, ApiKey.last_used_ip).where(
                    ApiKey.customer_id == account.customer_id
                )
            )
        ).one()
    assert used_ip == "127.0.0.9" and used_at is not None and utcnow() - used_at < timedelta(minutes=1)


async def test_a_revocation_in_another_process_is_refused_within_the_cache_bound(
    client: httpx.AsyncClient, platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key_cache_module, "CACHE_SECONDS", 0.3)
    account = await make_account(platform)
    key = await account.key({"wallet:read"})
    assert (await client.get(BALANCE, headers=bearer(key))).status_code == 200
    other = Database(platform.db.url)  # another process's database: its own cache
    try:
        async with other.unit_of_work() as uow:
            key_id = (
                await uow.session.execute(select(ApiKey.id).where(ApiKey.customer_id == account.customer_id))
            ).scalar_one()
            await revoke_key(uow.session, account.customer_id, key_id)
            await uow.commit()
        assert await authenticate(other, key, "127.0.0.9") is None
    finally:
        await other.dispose()
    await asyncio.sleep(0.35)
    assert (await client.get(BALANCE, headers=bearer(key))).status_code == 401


async def test_a_miss_reads_the_key_in_one_statement_as_stored(platform: Platform) -> None:
    """PostgreSQL: the miss is the key read alone (no BEGIN, no unit of work); both engines: the
    principal is the stored key's."""
    account = await make_account(platform)
    key = await account.key({"wallet:read", "catalog:read"})
    async with platform.db.unit_of_work(write=False) as uow:
        key_id = (
            await uow.session.execute(select(ApiKey.id).where(ApiKey.customer_id == account.customer_id))
        ).scalar_one()
    key_cache_module.key_cache(platform.db).drop(key_id)  # a cold cache for this key
    with statements(platform) as seen:
        principal = await authenticate(platform.db, key, "127.0.0.9")
    assert principal is not None and principal.key_id == key_id
    assert principal.customer_id == account.customer_id
    assert principal.scopes == frozenset({"wallet:read", "catalog:read"})
    assert _reads_key(seen)
    if not platform.db.is_sqlite:
        assert len(seen) == 1, seen


def test_a_read_started_before_a_drop_does_not_fill_the_cache() -> None:
    cache = KeyCache()
    principal = KeyPrincipal(uuid.uuid4(), 1, frozenset({"wallet:read"}))
    started = cache.generation
    cache.drop(principal.key_id)  # revoked while the read was in flight
    cache.put("digest", principal, started, (None, None))
    assert cache.get("digest") is None
    cache.put("digest", principal, cache.generation, (None, None))
    assert cache.get("digest") == principal
    cache.drop(principal.key_id)
    assert cache.get("digest") is None


def test_last_use_is_claimed_once_per_interval_and_per_ip() -> None:
    cache = KeyCache()
    key_id, now = uuid.uuid4(), utcnow()
    assert cache.claim_use(key_id, "127.0.0.1", now)
    assert not cache.claim_use(key_id, "127.0.0.1", now + timedelta(seconds=1))
    assert cache.claim_use(key_id, "127.0.0.2", now + timedelta(seconds=1))
    assert cache.claim_use(key_id, "127.0.0.2", now + key_cache_module.TOUCH_INTERVAL * 2)
