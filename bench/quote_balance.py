"""O(1) reads at provider size (issue 15, engineer O): the quote's stock check and the wallet balance,
timed through `invoke()` (the operation as every door runs it: unit of work, handler, response model; no
HTTP) at growing stock and ledger sizes, so the figure that must not grow with the data is seen growing
or not.

    .venv/bin/python bench/quote_balance.py postgresql://postgres@127.0.0.1:55432/pp_o_bench
    .venv/bin/python bench/quote_balance.py sqlite:////tmp/pp_o_bench.db
    .venv/bin/python bench/quote_balance.py <url> --stock 1500,150000,1000000 --ledger 100,100000

For each stock size (datacenter IPs, capacity 5, in 10 countries; a third of them partly or fully
assigned, as after many orders; one country, DE, sold out but for 3 IPs) it prints the quote
(`quote_composite`, 9 IPs in one country; then 3 countries) p50 and CPU per call (this process + the
PostgreSQL backend), the countries listing (`list_countries`) and the auto-plan; for each ledger size, one
customer's `get_balance`. The database is emptied first (PostgreSQL: its public schema is DROPPED;
SQLite: the file is removed). The machine is shared: compare CPU per call, not wall time.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import func, insert, select, text, update  # noqa: E402

from bench.fresh_db import fresh_database  # noqa: E402
from proxyplane.core.scopes import ALL_SCOPES  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.platform import Platform  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.models import Customer, LedgerEntry, StockIp, Wallet  # noqa: E402

COUNTRIES = ("US", "DE", "GB", "FR", "NL", "JP", "CA", "AU", "SE", "PL")
QUOTE_TARGET_MS = BALANCE_TARGET_MS = 2.0
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _cpu_ms(pid: int) -> float:
    """CPU (user + system) of a local process so far, ms; 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * TICK_MS


async def _backend_pids(db: Database) -> list[int]:
    if db.is_sqlite:
        return []
    async with db.engine.connect() as conn:
        rows = await conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"))
        return [int(r[0]) for r in rows]


async def timed(db: Database, repeat: int, call: Callable[[], Awaitable[Any]]) -> str:
    """p50 wall ms of `call()` and CPU ms per call (this process + the PostgreSQL backends of the pool)."""
    for _ in range(5):  # warm-up: statement caches, pool connections, PostgreSQL plan caches
        await call()
    pids = await _backend_pids(db)
    c0, s0 = time.process_time(), sum(_cpu_ms(p) for p in pids)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await call()
        times.append((time.perf_counter() - t0) * 1000)
    cpu = (time.process_time() - c0) * 1000 + sum(_cpu_ms(p) for p in pids) - s0
    return f"p50 {statistics.median(times):6.2f} ms (min {min(times):5.2f}; CPU {cpu / repeat:5.2f} ms/call)"


async def grow_stock(db: Database, upto: int, have: int, fold: Callable[[Database], Any] | None) -> None:
    """Add datacenter IPs (capacity 5) until `upto` are in stock, in one block per country (as an import
    of a range per country lays them out); a third carry allocations (assigned_count 1-5, a tenth of those
    full); DE is sold out but for 3 IPs."""
    rnd = random.Random(upto)
    per_country = (upto - have) // len(COUNTRIES)
    n = have
    async with db.unit_of_work() as uow:
        for country in COUNTRIES:
            rows = []
            for j in range(per_country):
                used = 0 if rnd.random() < 0.66 else (5 if rnd.random() < 0.1 else rnd.randint(1, 4))
                if country == "DE":
                    used = 0 if have == 0 and j < 3 else 5
                a = n + (1 << 20)
                n += 1
                rows.append(
                    {
                        "address": f"127.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}",
                        "product_kind": "proxy_datacenter",
                        "country_maxmind": country,
                        "country_ripe": country,
                        "capacity": 5,
                        "assigned_count": used,
                    }
                )
            for i in range(0, len(rows), 20_000):
                await uow.session.execute(insert(StockIp), rows[i : i + 20_000])
        await uow.commit()
    await settle(db, "stock_ips")
    if fold is not None:  # as the job worker would have within a second (jobs/stock_free_fold.py)
        await fold(db)


async def settle(db: Database, table: str) -> None:
    """Statistics (and PostgreSQL's visibility map), as autovacuum would have them on a live database."""
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.exec_driver_sql(f"ANALYZE {table}" if db.is_sqlite else f"VACUUM ANALYZE {table}")


async def grow_ledger(db: Database, customer_id: int, upto: int, have: int) -> None:
    """Ledger entries of +100 cents up to `upto`, the wallet row kept equal to their sum."""
    async with db.unit_of_work() as uow:
        for start in range(have, upto, 10_000):
            rows = [
                {
                    "customer_id": customer_id,
                    "amount_cents": 100,
                    "balance_after_cents": 100 * (i + 1),
                    "kind": "adjustment",
                    "description": "bench",
                }
                for i in range(start, min(upto, start + 10_000))
            ]
            await uow.session.execute(insert(LedgerEntry), rows)
        await uow.session.execute(
            update(Wallet).where(Wallet.customer_id == customer_id).values(balance_cents=100 * upto)
        )
        await uow.commit()
    await settle(db, "ledger_entries")


async def main() -> None:
    import proxyplane.operations  # noqa: F401  (registers every operation)
    from proxyplane.domains.orders.countries_ops import CountriesQuery
    from proxyplane.domains.orders.ops import AutoPlanIn, QuoteIn

    try:  # the maintained free counts (issue 15, engineer O); absent before them
        from proxyplane.jobs.stock_free_fold import fold_free_counts
    except ImportError:
        fold_free_counts = None  # type: ignore[assignment]
    from proxyplane.ops import REGISTRY, Caller, invoke

    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--stock", default="1500,150000", help="comma-separated stock sizes (IPs)")
    parser.add_argument("--ledger", default="100,100000", help="comma-separated ledger sizes (entries)")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    url = Settings(database_url=args.url).resolved_database_url()
    await fresh_database(url)
    with tempfile.TemporaryDirectory(prefix="pp-o-bench-") as home:
        settings = Settings(
            home=Path(home), database_url=url, secret_key="bench", public_base_url="http://testserver"
        )
        platform = Platform(settings, Database(url))
        db = platform.db
        async with db.unit_of_work() as uow:
            customer = Customer(
                email=f"o-{uuid.uuid4().hex[:8]}@example.com", password_hash="x", name="bench"
            )
            uow.session.add(customer)
            await uow.session.flush()
            uow.session.add(Wallet(customer_id=customer.id, balance_cents=0))
            cid = customer.id
            await uow.commit()
        caller = Caller(cid, None, frozenset(ALL_SCOPES), "127.0.0.9")
        anonymous = Caller(None, None, frozenset(), "127.0.0.9")

        def quote(countries: tuple[str, ...]) -> Callable[[], Awaitable[Any]]:
            data = QuoteIn(
                product_kind="proxy_datacenter",
                period_months=1,
                segments=[{"country": c, "count": 9} for c in countries],  # type: ignore[misc]
            )

            async def run() -> Any:
                return await invoke(platform, REGISTRY["quote_composite"], anonymous, data)

            return run

        async def countries() -> Any:
            return await invoke(platform, REGISTRY["list_countries"], anonymous, CountriesQuery())

        async def plan() -> Any:
            return await invoke(platform, REGISTRY["auto_plan"], anonymous, AutoPlanIn(total_ips=50))

        async def balance() -> Any:
            return await invoke(platform, REGISTRY["get_balance"], caller, None)

        have = 0
        for size in (int(s) for s in args.stock.split(",")):
            await grow_stock(db, size, have, fold_free_counts)
            have = size
            free = {c.code: c.available_ips for c in (await countries()).countries}
            out = await quote(("US", "DE"))()
            assert out.segments[0].available_ips == 9 and out.segments[1].available_ips == 3, out
            print(f"stock {size:>9,} IPs (PL free {free['PL']:,}, DE free {free.get('DE', 0)}):")
            print(
                f"  quote 9 IPs, PL (last)  {await timed(db, args.repeat, quote(('PL',)))}"
                f"  target <= {QUOTE_TARGET_MS} ms"
            )
            print(f"  quote PL, GB, DE (short) {await timed(db, args.repeat, quote(('PL', 'GB', 'DE')))}")
            print(f"  countries listing        {await timed(db, max(5, args.repeat // 10), countries)}")
            print(f"  auto-plan 50 IPs         {await timed(db, max(5, args.repeat // 10), plan)}")
        have = 0
        for size in (int(s) for s in args.ledger.split(",")):
            await grow_ledger(db, cid, size, have)
            have = size
            got = (await balance()).balance_cents
            async with db.unit_of_work(write=False) as uow:
                total = await uow.session.scalar(
                    select(func.sum(LedgerEntry.amount_cents)).where(LedgerEntry.customer_id == cid)
                )
            assert got == total == 100 * size, (got, total)
            print(
                f"ledger {size:>8,} entries: balance {await timed(db, args.repeat, balance)}"
                f"  target <= {BALANCE_TARGET_MS} ms"
            )
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main())
