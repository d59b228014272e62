"""Data generator for the gateway scale bench: N services on M exit IPs (plus customers, stock, whitelist,
add-ons, proxy settings), in a database migrated by Alembic (the command migrates it; ``generate()``
expects it migrated).

    .venv/bin/python -m bench.scale.generate --url postgresql://postgres@127.0.0.1:55432/pp_c_bench \
        --services 250000 --ips 1000000 [--reset]

PostgreSQL: COPY (asyncpg ``copy_records_to_table``); SQLite: Core executemany. Rows are appended: call it
again to grow a store (run.py measures 1k, then 50k, then 250k services this way). Exit IPs are
127.128.0.0 + index (loopback only); ``--first-ip`` moves that window. Services: 2 % rotating (pool
proxy_datacenter, with proxy settings), the rest static with ``ips / static`` exit IPs each; 20 % have a
whitelisted client IP, 5 % an extra-connections add-on. All active for 30 more days. The triggers of
migration 0012c log every service as they would for real writes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from proxyplane.core.clock import utcnow
from proxyplane.core.security import SecretBox
from proxyplane.core.settings import Settings
from proxyplane.storage.migrate import upgrade
from proxyplane.storage.models.base import Base

KINDS = ("proxy_datacenter", "proxy_isp", "proxy_personal")
COUNTRIES = ("US", "DE", "GB", "FR", "NL", "JP")
IP_BASE = (127 << 24) + (128 << 16)  # 127.128.0.0
BATCH = 50_000
SECRET = "scale-bench-secret"


@dataclass
class Counts:
    services: int = 0
    static: int = 0
    rotating: int = 0
    ips: int = 0
    whitelist: int = 0
    addons: int = 0
    customers: int = 0
    seconds: float = 0.0


def address(index: int) -> str:
    n = IP_BASE + index
    if n >= 1 << 32 or index < 0:
        raise ValueError("exit IP window exhausted (127.128.0.0/9 holds 8,388,608 addresses)")
    return f"127.{n >> 16 & 0xFF}.{n >> 8 & 0xFF}.{n & 0xFF}"


def resolved(url: str) -> str:
    return Settings(database_url=url).resolved_database_url()


async def _next_id(conn: AsyncConnection, table: str, column: str = "id") -> int:
    return int((await conn.execute(text(f"SELECT coalesce(max({column}), 0) FROM {table}"))).scalar_one()) + 1


async def _first_free_ip(conn: AsyncConnection) -> int:
    """Index of the first 127.128.0.0/9 address above every stock address already there."""
    window = "address LIKE '127.%' AND address NOT LIKE '127.__.%' AND address NOT LIKE '127._.%'"
    if conn.dialect.name == "postgresql":
        top = (await conn.execute(text(f"SELECT max(inet(address)) FROM stock_ips WHERE {window}"))).scalar()
        rows = [] if top is None else [str(top).split("/")[0]]
    else:
        rows = list((await conn.execute(text(f"SELECT address FROM stock_ips WHERE {window}"))).scalars())
    top_index = -1
    for a in rows:
        parts = [int(p) for p in a.split(".")]
        n = (parts[0] << 24) + (parts[1] << 16) + (parts[2] << 8) + parts[3] - IP_BASE
        top_index = max(top_index, n)
    return top_index + 1


async def _copy(
    conn: AsyncConnection, table: str, columns: Sequence[str], rows: Iterator[tuple[Any, ...]]
) -> None:
    """Append ``rows`` in batches: COPY on PostgreSQL, executemany on SQLite."""
    postgres = conn.dialect.name == "postgresql"
    if postgres:
        raw: Any = (await conn.get_raw_connection()).driver_connection
    sa_table = Base.metadata.tables[table]
    while True:
        batch = [r for _, r in zip(range(BATCH), rows, strict=False)]
        if not batch:
            return
        if postgres:
            await raw.copy_records_to_table(table, records=batch, columns=list(columns))
        else:
            await conn.execute(sa_table.insert(), [dict(zip(columns, r, strict=True)) for r in batch])


async def generate(
    url: str, services: int, ips: int, *, first_ip: int | None = None, tag: str = "", term_days: int = 30
) -> Counts:
    """Append ``services`` services holding ``ips`` exit IPs in all. Returns what was written.
    ``term_days``: each service's term from now (tests sharing a database pass a long one, so that the
    renewal job of other tests, run with a clock a month ahead, never finds thousands of them due)."""
    started = time.perf_counter()
    url = resolved(url)
    engine = create_async_engine(url)
    tag = tag or uuid.uuid4().hex[:8]
    now = utcnow()
    end = now + timedelta(days=term_days)
    box = SecretBox(SECRET)
    secrets = [box.encrypt(f"pw{i:04d}") for i in range(64)]
    rotating = max(1, services // 50) if services >= 50 else 0
    static = services - rotating
    if static and ips < static:
        raise ValueError("fewer exit IPs than static services")
    out = Counts(services=services, static=static, rotating=rotating, ips=ips if static else 0)
    postgres = url.startswith("postgresql")
    dump = json.dumps if postgres else (lambda v: v)  # COPY takes json as text
    try:
        async with engine.begin() as conn:
            first = await _first_free_ip(conn) if first_ip is None else first_ip
            customer0 = await _next_id(conn, "customers")
            stock0 = await _next_id(conn, "stock_ips")
            out.customers = max(1, services // 10)
            await _copy(
                conn,
                "customers",
                (
                    "id",
                    "email",
                    "password_hash",
                    "name",
                    "phone",
                    "status",
                    "partner_discount_percent",
                    "created_at",
                    "updated_at",
                ),
                (
                    (customer0 + i, f"scale-{tag}-{i}@scale.invalid", "!", "", "", "active", 0, now, now)
                    for i in range(out.customers)
                ),
            )
            await _copy(
                conn,
                "stock_ips",
                (
                    "id",
                    "address",
                    "product_kind",
                    "country_maxmind",
                    "country_ripe",
                    "capacity",
                    "assigned_count",
                    "created_at",
                ),
                (
                    (
                        stock0 + i,
                        address(first + i),
                        KINDS[i % 3],
                        COUNTRIES[i % 6],
                        COUNTRIES[(i + 1) % 6],
                        1,
                        1,
                        now,
                    )
                    for i in range(out.ips)
                ),
            )
            sids = [uuid.uuid4() for _ in range(services)]
            await _copy(
                conn,
                "services",
                (
                    "service_id",
                    "customer_id",
                    "product_kind",
                    "status",
                    "period_months",
                    "geo_source",
                    "segments",
                    "parameters",
                    "auto_renew",
                    "renewal_price_cents",
                    "period_price_cents",
                    "wallet_paid_cents",
                    "amount_due_cents",
                    "login",
                    "password_enc",
                    "max_connections",
                    "started_at",
                    "current_period_start",
                    "current_period_end",
                    "created_at",
                    "updated_at",
                ),
                (
                    (
                        sid,
                        customer0 + i % out.customers,
                        "proxy_rotating" if i < rotating else KINDS[i % 3],
                        "active",
                        1,
                        "maxmind",
                        dump([]),
                        dump({}),
                        False,
                        500,
                        500,
                        500,
                        0,
                        f"s{tag}{i}",
                        secrets[i % 64],
                        100,
                        now,
                        now,
                        end,
                        now,
                        now,
                    )
                    for i, sid in enumerate(sids)
                ),
            )
            per, extra = divmod(out.ips, static) if static else (0, 0)

            def service_ips() -> Iterator[tuple[Any, ...]]:
                ip = 0
                for j in range(static):
                    for _ in range(per + (1 if j < extra else 0)):
                        yield (sids[rotating + j], stock0 + ip, address(first + ip), COUNTRIES[ip % 6], now)
                        ip += 1

            await _copy(
                conn,
                "service_ips",
                ("service_id", "ip_id", "address", "country", "allocated_at"),
                service_ips(),
            )
            whitelisted = range(0, services, 5)
            out.whitelist = len(whitelisted)
            await _copy(
                conn,
                "service_whitelist",
                ("service_id", "ip", "created_at"),
                ((sids[i], f"127.5.{i >> 8 & 0xFF}.{i & 0xFF}", now) for i in whitelisted),
            )
            with_addon = range(3, services, 20)
            out.addons = len(with_addon)
            await _copy(
                conn,
                "service_addons",
                (
                    "addon_id",
                    "service_id",
                    "customer_id",
                    "kind",
                    "status",
                    "quantity",
                    "parameters",
                    "purchase_price_cents",
                    "monthly_cents",
                    "paid_cents",
                    "period_start",
                    "period_end",
                    "activated_at",
                    "refunded_cents",
                ),
                (
                    (
                        uuid.uuid4(),
                        sids[i],
                        customer0 + i % out.customers,
                        "extra_connections",
                        "active",
                        1,
                        dump({"connections": 50}),
                        100,
                        100,
                        100,
                        now,
                        end,
                        now,
                        0,
                    )
                    for i in with_addon
                ),
            )
            await _copy(
                conn,
                "proxy_settings",
                ("service_id", "session_mode", "sticky_ttl_seconds", "updated_at"),
                ((sids[i], "rotating", 600, now) for i in range(rotating)),
            )
            if postgres:
                for table, column in (("customers", "id"), ("stock_ips", "id")):
                    await conn.execute(
                        text(
                            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                            f"(SELECT max({column}) FROM {table}))"
                        )
                    )
        if postgres:
            async with engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("ANALYZE"))
    finally:
        await engine.dispose()
    out.seconds = time.perf_counter() - started
    return out


async def reset(url: str) -> None:
    """Drop everything in the bench database (PostgreSQL: the public schema; SQLite: the file)."""
    url = resolved(url)
    if url.startswith("sqlite"):
        from pathlib import Path

        Path(url.split("///", 1)[-1]).unlink(missing_ok=True)
        return
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        await conn.execute(text("CREATE SCHEMA public"))
    await engine.dispose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="bench database (never a shared one: --reset drops it)")
    p.add_argument("--services", type=int, default=250_000)
    p.add_argument("--ips", type=int, default=1_000_000)
    p.add_argument(
        "--first-ip", type=int, default=None, help="index into 127.128.0.0/9 (default: after the last)"
    )
    p.add_argument("--reset", action="store_true", help="empty the database first")
    args = p.parse_args()

    async def run() -> Counts:
        if args.reset:
            await reset(args.url)
        await upgrade(resolved(args.url))
        return await generate(args.url, args.services, args.ips, first_ip=args.first_ip)

    c = asyncio.run(run())
    print(
        f"{c.services} services ({c.static} static, {c.rotating} rotating) on {c.ips} exit IPs, "
        f"{c.whitelist} whitelisted, {c.addons} add-ons, {c.customers} customers in {c.seconds:.1f} s"
    )


if __name__ == "__main__":
    main()
