"""An emptied, migrated bench database: the set-up the bench scripts share.

PostgreSQL: the public schema is DROPPED and created again; SQLite: the file is removed. Then the Alembic
migrations run to the head. Only ever point it at a database of your own (a *_bench one).
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

from sqlalchemy import text

from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import upgrade


async def fresh_database(url: str) -> None:
    """Empty the database at `url` (a resolved SQLAlchemy async URL) and migrate it to the head."""
    if url.startswith("postgresql"):
        db = Database(url)
        async with db.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
        await db.dispose()
    else:
        path = url.split("///", 1)[1]
        if os.path.exists(path):
            os.remove(path)
    await upgrade(url)


async def one_buyer(db: Database, capacity: int, balance_cents: int, tag: str) -> tuple[int, str]:
    """(customer id, raw API key) of a funded customer with every scope, after 19,999 US datacenter IPs
    (127.20.x.y, `capacity` slots each) were added to the stock: the in-process CPU benches' set-up."""
    from sqlalchemy import insert

    from proxyplane.core.scopes import ALL_SCOPES
    from proxyplane.domains.accounts import service as accounts
    from proxyplane.domains.apikeys.service import create_key
    from proxyplane.domains.wallet.service import credit
    from proxyplane.storage.models import StockIp

    async with db.unit_of_work() as uow:
        rows = [
            {
                "address": f"127.20.{i >> 8}.{i & 255}",
                "product_kind": "proxy_datacenter",
                "country_maxmind": "US",
                "country_ripe": "US",
                "capacity": capacity,
                "assigned_count": 0,
            }
            for i in range(1, 20_000)
        ]
        await uow.session.execute(insert(StockIp), rows)
        customer = await accounts.create_customer(
            uow.session, f"{tag}-{uuid.uuid4().hex[:6]}@example.com", "bench password 1"
        )
        await credit(uow.session, customer.id, balance_cents, "adjustment", "bench balance")
        _, key = await create_key(uow.session, customer.id, "bench", frozenset(ALL_SCOPES))
        await uow.commit()
    return customer.id, key


def order_body(country: str = "US", count: int | None = None, key: str | None = None) -> dict[str, Any]:
    """A composite order's JSON body as the benches place it: `count` (default 7-12) datacenter IPs in
    `country`, one whitelisted loopback address, paid from the balance, a fresh idempotency key."""
    return {
        "product_kind": "proxy_datacenter",
        "period_months": 1,
        "segments": [{"country": country, "count": count if count is not None else random.randint(7, 12)}],
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": key or uuid.uuid4().hex,
    }
