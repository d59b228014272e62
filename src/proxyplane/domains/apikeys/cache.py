"""The key check's in-process cache: a valid key's principal for at most CACHE_SECONDS, so an
authenticated request does not open a unit of work of its own just to read its key.

Bound (bench/results/control-plane-diary.md "API key check"): a key revoked through this process is refused
from the revoking commit on (the entry is dropped when revoke_key runs and again after its commit, and a read
that started before a drop never fills the cache); revoked in another process, or its customer
disabled by any means, it is refused within CACHE_SECONDS. Only valid keys are cached (an unknown or
revoked key is read every time, as before), at most CACHE_MAX of them per database.

The last-use time and IP of a key are written by the request's own unit of work (`invoke`), at most
once per TOUCH_INTERVAL per key and process (and whenever the client IP changes): `last_use_due`
claims the write, `record_last_use` adds its UPDATE to the caller's transaction (never commits)."""

from __future__ import annotations

import time
import uuid
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proxyplane.storage.engine import Database

CACHE_SECONDS = 2.0
CACHE_MAX = 10_000
TOUCH_INTERVAL = timedelta(seconds=5)


@dataclass(frozen=True)
class KeyPrincipal:
    key_id: uuid.UUID
    customer_id: int
    scopes: frozenset[str]
    # every spend confirmed by the person over MCP (api_keys.confirm_spending; fixed at the key's creation)
    confirm_spending: bool = False
    # the team member who made the key (issue 34.5), or None (the account's own key)
    member_id: int | None = None


@dataclass(frozen=True)
class _Entry:
    principal: KeyPrincipal
    expires: float  # time.monotonic()


class KeyCache:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._digests: dict[uuid.UUID, str] = {}
        # key id -> (time, IP) of its last use as written (or claimed) by this process or read from the row
        self._used: dict[uuid.UUID, tuple[datetime, str | None]] = {}
        self.generation = 0  # moves on every drop: a read that started before it does not fill

    def get(self, digest: str) -> KeyPrincipal | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry.expires <= time.monotonic():
            self._drop_digest(digest)
            return None
        return entry.principal

    def put(
        self,
        digest: str,
        principal: KeyPrincipal,
        generation: int,
        last_used: tuple[datetime | None, str | None],
    ) -> None:
        if generation != self.generation:
            return
        if len(self._entries) >= CACHE_MAX:
            self._evict()
        self._entries[digest] = _Entry(principal, time.monotonic() + CACHE_SECONDS)
        self._digests[principal.key_id] = digest
        at, ip = last_used
        known = self._used.get(principal.key_id)
        if at is not None and (known is None or known[0] < at):
            self._used[principal.key_id] = (at, ip)

    def drop(self, key_id: uuid.UUID) -> None:
        """Forget a key (revoked): its next request reads the row."""
        self.generation += 1
        digest = self._digests.get(key_id)
        if digest is not None:
            self._drop_digest(digest)

    def _drop_digest(self, digest: str) -> None:
        entry = self._entries.pop(digest, None)
        if entry is not None:
            self._digests.pop(entry.principal.key_id, None)
            self._used.pop(entry.principal.key_id, None)

    def _evict(self) -> None:
        now = time.monotonic()
        for digest in [d for d, e in self._entries.items() if e.expires <= now]:
            self._drop_digest(digest)
        while len(self._entries) >= CACHE_MAX:
            self._drop_digest(next(iter(self._entries)))

    def claim_use(self, key_id: uuid.UUID, ip: str, now: datetime) -> bool:
        """True when this use must be written (none known, older than TOUCH_INTERVAL, or another IP);
        the claim counts as written: concurrent requests of the key do not write it again."""
        known = self._used.get(key_id)
        if known is not None and known[1] == ip and now - known[0] < TOUCH_INTERVAL:
            return False
        self._used[key_id] = (now, ip)
        return True


_CACHES: weakref.WeakKeyDictionary[Database, KeyCache] = weakref.WeakKeyDictionary()


def key_cache(db: Database) -> KeyCache:
    cache = _CACHES.get(db)
    if cache is None:
        cache = _CACHES[db] = KeyCache()
    return cache


def drop_everywhere(key_id: uuid.UUID) -> None:
    """Forget a key in every database's cache of this process (revoke_key has a session, not a db)."""
    for cache in list(_CACHES.values()):
        cache.drop(key_id)
