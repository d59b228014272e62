"""The key check's statements (issue 31: moved from domains/apikeys/service.py, which keeps what a key
check means): the read of a key by its digest on a cache miss, the write of a key's last use, and a new
key's row.

The read is sent alone where the engine allows it: PostgreSQL, one statement on a pooled connection with
no transaction around it (`DriverStatement.rows_alone`: one round trip); SQLite, a short read unit of
work. The last use is one UPDATE in the request's own transaction (a driver statement). A revoke sets
`revoked_at` on the loaded key (the unit of work's); the keys' spending caps: api_key_spending.py.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine import Database
from proxyplane.storage.models import ApiKey, Customer

# built once (a cache miss runs it: once per key and CACHE_SECONDS, or for every unknown key)
_KEY_BY_DIGEST = (
    select(
        ApiKey.id,
        ApiKey.customer_id,
        ApiKey.scopes,
        ApiKey.revoked_at,
        ApiKey.last_used_at,
        ApiKey.last_used_ip,
        ApiKey.confirm_spending,
        Customer.status,
        ApiKey.member_id,
    )
    .join(Customer, Customer.id == ApiKey.customer_id)
    .where(ApiKey.key_hash == bindparam("digest"))
)
_KEY_READ = DriverStatement(_KEY_BY_DIGEST)  # the same read on the driver, outside any transaction

_KEYS = cast(Table, ApiKey.__table__)
_TOUCH = DriverStatement(
    update(_KEYS)
    .where(_KEYS.c.id == bindparam("key_id"))
    .values(
        last_used_at=bindparam("used_at", type_=_KEYS.c.last_used_at.type),
        last_used_ip=bindparam("used_ip", type_=_KEYS.c.last_used_ip.type),
    )
)


async def read_by_digest(db: Database, digest: str) -> Any | None:
    """(id, customer_id, scopes, revoked_at, last_used_at, last_used_ip, confirm_spending, customer status,
    member_id) of the key with this digest, or None. Driver values: scopes may be JSON text and
    last_used_at a naive or non-UTC datetime (the caller normalises both)."""
    if db.is_sqlite:
        async with db.unit_of_work(write=False) as uow:
            return (await uow.session.execute(_KEY_BY_DIGEST, {"digest": digest})).first()
    found = await _KEY_READ.rows_alone(db.engine, {"digest": digest})
    return found[0] if found else None


async def touch(session: AsyncSession, key_id: uuid.UUID, client_ip: str, now: datetime) -> None:
    """The key's last use: one UPDATE in the caller's transaction."""
    await _TOUCH.rows(session, {"key_id": key_id, "used_at": now, "used_ip": client_ip})


async def add(session: AsyncSession, key: ApiKey) -> None:
    """A new key's row, flushed (its id and created_at are known)."""
    session.add(key)
    await session.flush()
