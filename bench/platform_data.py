"""Control-plane data at provider scale (issue 15, points 2-4): stock import, usage reads, list paging.

    python bench/platform_data.py --db URL --size provider     # or --size small (seconds; CI's size)

`measure(database_url, size)` (also used by bench/platform.py) generates what it measures in the given
(migrated) database and removes it afterwards:
- stock: a /16 and (provider size) 1,000,000 more IPs imported with `domains/stock/bulk.import_rows`
  (the `admin stock add-range` path) into pool proxy_isp, country KZ; IPs/s per import;
- usage: services with every minute of 30 days (43,200 minute rows each) among 10,000 services with a
  few minutes a day, written set-based (generate_series / a recursive CTE) plus their rollups (the
  migration's backfill); `domains/usage/service.totals` (what GET .../usage runs: counters and errors by
  category) p50 over windows of 1 h, 1 d and 30 d with ragged ends; the series per minute over 1 h and
  1 d, per hour and per day over 30 d;
- lists: one customer with 10,000 services, 100,000 ledger entries and 10,000 invoices; the domain list
  functions of GET /customer/services, /wallet/ledger and /invoices, p50 at the first, middle and last
  page (limit 50).
Generated tables are analyzed (PostgreSQL: VACUUM ANALYZE) before reading, as autovacuum would have.
The machine is shared while it runs: figures are noisy (p50 of repeated calls).
"""

from __future__ import annotations

import os
import sys

# run as a script, bench/ is sys.path[0]: its platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import func, insert, select, text  # noqa: E402

from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.domains.invoices import service as invoices  # noqa: E402
from proxyplane.domains.services import service as services  # noqa: E402
from proxyplane.domains.stock import bulk  # noqa: E402
from proxyplane.domains.stock import service as stock  # noqa: E402
from proxyplane.domains.usage import service as usage  # noqa: E402
from proxyplane.domains.wallet import service as wallet  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.migrate import upgrade  # noqa: E402
from proxyplane.storage.models import Customer, LedgerEntry, Service, StockIp  # noqa: E402
from proxyplane.storage.models.billing import Invoice  # noqa: E402

Row = tuple[str, str, str, bool]
SIZES: dict[str, dict[str, int]] = {
    "small": {
        "range_bits": 10,
        "million": 0,
        "dense": 3,
        "sparse": 50,
        "days": 2,
        "services": 300,
        "ledger": 3_000,
        "invoices": 300,
        "repeat": 7,
    },
    "provider": {
        "range_bits": 16,
        "million": 1_000_000,
        "dense": 20,
        "sparse": 9_980,
        "days": 30,
        "services": 10_000,
        "ledger": 100_000,
        "invoices": 10_000,
        "repeat": 25,
    },
}
BASE = datetime(2026, 9, 1, tzinfo=UTC)  # first minute of the generated usage
IMPORT_TARGET, USAGE_TARGET_MS, LIST_TARGET_MS, QUOTE_TARGET_MS = 50_000, 50.0, 20.0, 5.0


def _backfill_sql() -> Callable[..., list[str]]:
    path = Path(__file__).resolve().parents[1] / "src/proxyplane/storage/migrations/versions"
    spec = importlib.util.spec_from_file_location("m0012e", path / "0012e_usage_rollups_list_indexes.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.backfill_sql  # type: ignore[no-any-return]


class Timing(float):
    """Median wall time in ms (compared with the target), printed with the fastest call and the CPU time
    per call (this process, and on PostgreSQL the server backend that ran it): on a shared, overloaded
    machine wall times stretch with everyone's load, the CPU time per call much less."""

    fastest: float
    cpu: float

    def __str__(self) -> str:
        return f"{self:.1f} ms p50 (min {self.fastest:.1f}; CPU {self.cpu:.1f} ms/call)"


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _backend_ms(pid: int) -> float:
    """CPU time (user + system) of a local process so far, in ms; 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * TICK_MS


async def p50_ms(db: Database, repeat: int, call: Callable[[Any], Awaitable[Any]]) -> Timing:
    """Wall time of `call(session)` in its own read unit of work (opened and closed), and CPU."""
    times, cpu = [], 0.0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        async with db.unit_of_work(write=False) as uow:
            pid = 0 if db.is_sqlite else int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
            s0 = _backend_ms(pid)
            await call(uow.session)
            cpu += _backend_ms(pid) - s0
        times.append((time.perf_counter() - t0) * 1000)
        cpu += (time.process_time() - c0) * 1000
    out = Timing(statistics.median(times))
    out.fastest, out.cpu = min(times), cpu / repeat
    return out


async def settle(db: Database, tables: tuple[str, ...]) -> None:
    """What autovacuum does to a live database: statistics and (PostgreSQL) the visibility map, which
    index-only scans need. Freshly bulk-written tables have neither."""
    async with db.engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in tables:
            await conn.exec_driver_sql(f"ANALYZE {table}" if db.is_sqlite else f"VACUUM ANALYZE {table}")


# --- stock ----------------------------------------------------------------------------------------


async def import_rate(db: Database, first: int, count: int) -> tuple[float, int, float]:
    """(IPs/s, IPs added, CPU µs per IP: this process + the PostgreSQL backend) importing `count`
    addresses from `first` in one transaction."""
    t0, c0 = time.perf_counter(), time.process_time()
    async with db.unit_of_work() as uow:
        pid = 0 if db.is_sqlite else int(await uow.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        s0 = _backend_ms(pid)
        rows = bulk.range_rows(first, first + count - 1, "KZ", "KZ")
        result = await bulk.import_rows(uow.session, "proxy_isp", rows)
        await uow.commit()
        server = _backend_ms(pid) - s0
    cpu_ms = (time.process_time() - c0) * 1000 + server
    return count / (time.perf_counter() - t0), result.added, cpu_ms * 1000 / count


def _rate(rate: float, added: int, cpu_us: float) -> str:
    return f"{rate:,.0f} IPs/s, CPU {cpu_us:.1f} µs/IP ({added:,} new)"


async def quote_rows(db: Database, size: dict[str, int], country: str, free: int) -> list[Row]:
    """What a quote's stock check costs in a country with `free` IPs on sale: the capped count a quote
    runs (`availability` with {country: wanted}) beside the full count (the countries endpoint's)."""
    out: list[Row] = []
    for label, wanted in (("quote stock check, 10 IPs", {country: 10}), ("full count (countries)", None)):

        async def check(session: Any, wanted: dict[str, int] | None = wanted) -> None:
            got = await stock.availability(session, "proxy_isp", "maxmind", wanted or [country])
            assert got[country] == (10 if wanted else free)

        ms = await p50_ms(db, size["repeat"], check)
        target = f"< {QUOTE_TARGET_MS:.0f} ms (quote p50 was 10.9)" if wanted else "-"
        out.append((f"{label} in a country with {free:,} free IPs", str(ms), target,
                    ms < QUOTE_TARGET_MS or not wanted))

    async def nothing(session: Any) -> None:
        return None

    ms = await p50_ms(db, size["repeat"], nothing)  # what every figure above pays before its query
    out.append(("a read unit of work alone (in every figure)", str(ms), "-", True))
    return out


async def stock_rows(db: Database, size: dict[str, int]) -> list[Row]:
    async with db.unit_of_work(write=False) as uow:
        before = int(await uow.session.scalar(select(func.coalesce(func.max(StockIp.id), 0))) or 0)
    n = (1 << size["range_bits"]) - 2
    first = (127 << 24) | (200 << 16) | 1  # 127.200.0.1 .. : hosts of a /16 (or smaller)
    out: list[Row] = []
    try:
        rate, added, cpu = await import_rate(db, first, n)
        full = size["range_bits"] >= 16  # the target is set for a /16; a small range is all overhead
        out.append(
            (
                f"import a /{32 - size['range_bits']} ({n:,} IPs)",
                _rate(rate, added, cpu),
                f">= {IMPORT_TARGET:,} IPs/s" if full else "- (set for a /16)",
                rate >= IMPORT_TARGET or not full,
            )
        )
        if size["million"]:
            start = (127 << 24) | (201 << 16)  # 127.201.0.0 .. 127.216.66.63
            rate, added, cpu = await import_rate(db, start, size["million"])
            async with db.unit_of_work(write=False) as uow:
                in_stock = int(await uow.session.scalar(select(func.count()).select_from(StockIp)) or 0)
            out.append(
                (
                    f"import 1,000,000 IPs (stock after: {in_stock:,})",
                    _rate(rate, added, cpu),
                    f">= {IMPORT_TARGET:,} IPs/s",
                    rate >= IMPORT_TARGET,
                )
            )
        await settle(db, ("stock_ips",))
        async with db.unit_of_work(write=False) as uow:
            free = await stock.availability(uow.session, "proxy_isp", "maxmind", ["KZ"])
        out += await quote_rows(db, size, "KZ", free.get("KZ", 0))
    finally:
        async with db.unit_of_work() as uow:  # leave the stock as it was
            await uow.session.execute(
                text(
                    "DELETE FROM stock_ips WHERE id > :id AND country_maxmind = 'KZ' AND assigned_count = 0"
                ),
                {"id": before},
            )
            await uow.commit()
        await settle(db, ("stock_ips",))  # no dead rows left for the next run to wade through
    return out


# --- usage ----------------------------------------------------------------------------------------


def _numbers(postgres: bool, n: int) -> str:
    if postgres:
        return f"WITH g(n) AS (SELECT generate_series(0, {n - 1}))"
    return f"WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < {n - 1})"


def _minute(postgres: bool) -> str:
    if postgres:
        return "(CAST(:base AS timestamptz) + g.n * interval '1 minute')"
    return "strftime('%Y-%m-%d %H:%M:%S.000000', :base, '+' || g.n || ' minutes')"


async def generate_usage(db: Database, size: dict[str, int]) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """(dense, all) service ids; minutes, errors and rollups written set-based."""
    postgres = not db.is_sqlite
    dense = [uuid.uuid4() for _ in range(size["dense"])]
    sparse = [uuid.uuid4() for _ in range(size["sparse"])]
    base = BASE if postgres else BASE.strftime("%Y-%m-%d %H:%M:%S")
    minutes = size["days"] * 1440
    counters = "g.n % 7 + 1, 1, g.n % 1000, (g.n * 7) % 5000"
    async with db.unit_of_work() as uow:
        conn = await uow.session.connection()
        sid_type = "uuid" if postgres else "CHAR(32)"
        await conn.exec_driver_sql(
            f"CREATE TEMP TABLE bench_sids (sid {sid_type} NOT NULL, dense INT NOT NULL)"
        )
        values = [{"sid": s if postgres else s.hex, "dense": int(s in set(dense))} for s in dense + sparse]
        await conn.execute(text("INSERT INTO bench_sids VALUES (:sid, :dense)"), values)
        for dense_flag, count, minute_of in (
            (1, minutes, "g.n"),
            (0, size["days"] * 4, "(g.n / 4) * 1440 + 600 + (g.n % 4) * 17"),
        ):
            minute = _minute(postgres).replace("g.n", f"({minute_of})")
            numbers, where = (
                _numbers(postgres, count),
                f"FROM bench_sids s CROSS JOIN g WHERE s.dense = {dense_flag}",
            )
            await conn.execute(
                text(
                    f"{numbers} INSERT INTO usage_minutes (service_id, minute, host, requests, connections, "
                    f"bytes_up, bytes_down, errors) SELECT s.sid, {minute}, 'a.example', {counters}, "
                    f"CASE WHEN g.n % 97 = 0 THEN 1 ELSE 0 END {where}"
                ),
                {"base": base},
            )
            await conn.execute(
                text(
                    f"{numbers} INSERT INTO usage_errors (service_id, minute, host, category, count) "
                    f"SELECT s.sid, {minute}, 'a.example', 'upstream', 1 {where} AND g.n % 97 = 0"
                ),
                {"base": base},
            )
        for statement in _backfill_sql()(conn.dialect.name, "service_id IN (SELECT sid FROM bench_sids)"):
            await conn.exec_driver_sql(statement)
        await conn.exec_driver_sql("DROP TABLE bench_sids")
        await uow.commit()
    return dense, dense + sparse


async def drop_usage(db: Database, sids: list[uuid.UUID]) -> None:
    async with db.unit_of_work() as uow:
        for table in ("usage_minutes", "usage_errors", "usage_rollups", "usage_error_rollups"):
            for i in range(0, len(sids), 500):
                part = sids[i : i + 500]
                params = {f"s{j}": s if not db.is_sqlite else s.hex for j, s in enumerate(part)}
                marks = ", ".join(f":s{j}" for j in range(len(part)))
                await uow.session.execute(text(f"DELETE FROM {table} WHERE service_id IN ({marks})"), params)
        await uow.commit()


async def usage_rows(db: Database, size: dict[str, int]) -> list[Row]:
    t0 = time.perf_counter()
    dense, every = await generate_usage(db, size)
    await settle(db, ("usage_minutes", "usage_errors", "usage_rollups", "usage_error_rollups"))
    made = time.perf_counter() - t0
    rng = random.Random(5)
    out: list[Row] = []
    try:
        last = BASE + timedelta(days=size["days"])
        for label, length in (
            ("1 h", timedelta(hours=1)),
            ("1 d", timedelta(days=1)),
            (f"{size['days']} d", timedelta(days=size["days"]) - timedelta(minutes=20)),
        ):

            async def read(session: Any, length: timedelta = length) -> None:
                start = BASE + timedelta(
                    seconds=rng.randrange(int((last - BASE - length).total_seconds()) + 1)
                )
                t = await usage.totals(
                    session, rng.choice(dense), start + timedelta(seconds=7), start + length
                )
                assert t.requests > 0

            ms = await p50_ms(db, size["repeat"], read)
            out.append(
                (
                    f"usage totals + errors over {label} (minute data: {len(dense)} of {len(every):,} "
                    f"services, {size['days']} d)",
                    str(ms),
                    f"< {USAGE_TARGET_MS:.0f} ms",
                    ms < USAGE_TARGET_MS,
                )
            )
        whole = timedelta(days=size["days"]) - timedelta(hours=1)
        for label, length, resolution in (
            ("1 h", timedelta(hours=1), "minute"),
            ("1 d", timedelta(days=1), "minute"),
            (f"{size['days']} d", whole, "hour"),
            (f"{size['days']} d", whole, "day"),
        ):

            async def points(session: Any, length: timedelta = length, resolution: str = resolution) -> None:
                start = BASE + timedelta(
                    minutes=rng.randrange(int((last - BASE - length).total_seconds() // 60))
                )
                assert await usage.series(session, rng.choice(dense), start, start + length, resolution)

            ms = await p50_ms(db, size["repeat"], points)
            out.append(
                (
                    f"usage series per {resolution} over {label}",
                    str(ms),
                    f"< {USAGE_TARGET_MS:.0f} ms",
                    ms < USAGE_TARGET_MS,
                )
            )
    finally:
        await drop_usage(db, every)
    out.append(("usage data generated (minutes + rollups, set-based)", f"{made:.1f} s", "-", True))
    return out


# --- lists ----------------------------------------------------------------------------------------


async def generate_customer(db: Database, size: dict[str, int]) -> int:
    tag = uuid.uuid4().hex[:12]
    async with db.unit_of_work() as uow:
        s = uow.session
        customer = Customer(email=f"bench-{tag}@example.com", password_hash="x", name="bench")
        s.add(customer)
        await s.flush()
        cid = customer.id
        svc = [
            {
                "customer_id": cid,
                "product_kind": "proxy_datacenter",
                "status": "expired",
                "login": f"b{tag}{i}",
                "password_enc": "x",
                "segments": [],
                "parameters": {},
            }
            for i in range(size["services"])
        ]
        for i in range(0, len(svc), 5_000):
            await s.execute(insert(Service), svc[i : i + 5_000])
        entries = [
            {
                "customer_id": cid,
                "amount_cents": 100,
                "balance_after_cents": 100 * (i + 1),
                "kind": "credit",
                "description": "bench",
            }
            for i in range(size["ledger"])
        ]
        for i in range(0, len(entries), 10_000):
            await s.execute(insert(LedgerEntry), entries[i : i + 10_000])
        invs = [{"customer_id": cid, "kind": "deposit", "total_cents": 100} for _ in range(size["invoices"])]
        for i in range(0, len(invs), 5_000):
            await s.execute(insert(Invoice), invs[i : i + 5_000])
        await uow.commit()
    return cid


async def list_rows(db: Database, size: dict[str, int]) -> list[Row]:
    cid = await generate_customer(db, size)
    await settle(db, ("services", "ledger_entries", "invoices"))
    out: list[Row] = []
    try:
        lists: dict[str, tuple[int, Callable[[Any, int], Awaitable[Any]]]] = {
            "services": (size["services"], lambda s, o: services.list_for_customer(s, cid, o, 50)),
            "ledger": (size["ledger"], lambda s, o: wallet.ledger(s, cid, o, 50)),
            "invoices": (size["invoices"], lambda s, o: invoices.list_for_customer(s, cid, o, 50)),
        }
        for name, (total, page) in lists.items():
            for where, offset in (("first", 0), ("middle", total // 2), ("last", total - 50)):

                async def call(
                    session: Any, page: Any = page, offset: int = offset, total: int = total
                ) -> None:
                    rows, counted = await page(session, offset)
                    assert len(rows) == 50 and counted == total

                ms = await p50_ms(db, size["repeat"], call)
                out.append(
                    (
                        f"list {name} ({total:,}), {where} page (offset {offset:,}, limit 50)",
                        str(ms),
                        f"< {LIST_TARGET_MS:.0f} ms",
                        ms < LIST_TARGET_MS,
                    )
                )
    finally:
        async with db.unit_of_work() as uow:
            await uow.session.execute(text("DELETE FROM customers WHERE id = :id"), {"id": cid})
            await uow.commit()
    return out


PARTS = ("stock", "usage", "lists")


async def measure(database_url: str, size: str, parts: tuple[str, ...] = PARTS) -> list[Row]:
    """(figure, measured, target, ok) rows for issue 15 points 2-4 on this database (stock includes
    the quote's stock check on the imported stock)."""
    url = Settings(database_url=database_url).resolved_database_url()
    await upgrade(url)
    db = Database(url)
    try:
        s = SIZES[size]
        out: list[Row] = []
        for name, part in (("stock", stock_rows), ("usage", usage_rows), ("lists", list_rows)):
            if name in parts:
                out += await part(db, s)
        return out
    finally:
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="database URL (sqlite:///... or postgresql://...)")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    args = parser.parse_args()
    rows = asyncio.run(measure(args.db, args.size, tuple(args.parts.split(","))))
    print(f"| figure ({args.size}, {args.db.split(':')[0]}) | measured | target | ok |\n|---|---|---|---|")
    for figure, measured, target, ok in rows:
        print(f"| {figure} | {measured} | {target} | {'yes' if ok else 'NO'} |")
    sys.exit(0 if all(r[3] for r in rows) else 1)


if __name__ == "__main__":
    main()
