"""Sub-user usage reads over long windows (issue 18): the totals and the per-day series of one sub-user over
D days of metered minutes (H destination hosts a minute), read as the operations do now (whole days and
hours from subuser_usage_rollups, minutes at the edges) and as they did before the rollups (a sum over
every minute row of the window). The minutes are written through apply_usage (the one writer), which keeps
the rollups. Prints the rows written and the best-of-5 milliseconds per read (wall time; a shared machine
stretches it).

    .venv/bin/python bench/subuser_usage_reads.py postgresql://postgres@127.0.0.1:55432/pp_c_bench 30 3
    .venv/bin/python bench/subuser_usage_reads.py sqlite:////tmp/pp_subuser_reads.db 30 3

The database is emptied first (PostgreSQL: its public schema is DROPPED; SQLite: the file is removed).
"""

from __future__ import annotations

import os
import sys

# run as a script: bench/platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import asyncio  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import func, select  # noqa: E402

from bench.fresh_db import fresh_database  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.domains.subusers.metering import apply_usage  # noqa: E402
from proxyplane.domains.usage import service as usage  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.models.subusers import SubuserUsageMinute  # noqa: E402

BASE = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
PK = 1  # a sub-user's internal id (the usage tables carry no foreign key)
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")


async def write(db: Database, days: int, hosts: int) -> int:
    rows = 0
    minutes = [BASE + timedelta(minutes=m) for m in range(days * 1440)]
    for i in range(0, len(minutes), 1440):  # one flush per day of minutes
        batch = [
            {
                "subuser_pk": PK,
                "minute": m,
                "host": f"h{h}.example",
                "requests": 3,
                "connections": 1,
                "bytes_up": 500,
                "bytes_down": 5000,
                "errors": 0,
            }
            for m in minutes[i : i + 1440]
            for h in range(hosts)
        ]
        async with db.unit_of_work() as uow:
            await apply_usage(uow.session, batch, [])
            await uow.commit()
        rows += len(batch)
    return rows


async def best_ms(db: Database, read: Callable[[Any], Awaitable[Any]]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(5):
        async with db.unit_of_work(write=False) as uow:
            t = time.perf_counter()
            out = await read(uow.session)
            best = min(best, time.perf_counter() - t)
    return best * 1000, out


async def main(url: str, days: int, hosts: int) -> None:
    url = Settings(database_url=url).resolved_database_url()
    await fresh_database(url)
    db = Database(url)
    try:
        t = time.perf_counter()
        rows = await write(db, days, hosts)
        print(f"{rows} minute rows written through apply_usage in {time.perf_counter() - t:.1f} s")
        sid = uuid.uuid4()  # the reads filter on the sub-user's id only
        start, end = BASE + timedelta(minutes=7), BASE + timedelta(days=days, minutes=-3)
        m = SubuserUsageMinute
        sums = [func.sum(getattr(m, c)) for c in COUNTERS]
        where = (m.subuser_pk == PK, m.minute >= start, m.minute < end)

        async def rolled(s: Any) -> Any:
            return await usage.totals(s, sid, start, end, subuser=PK)

        async def minutes_only(s: Any) -> Any:
            return (await s.execute(select(*sums).where(*where))).one()

        async def series_rolled(s: Any) -> Any:
            return await usage.series(s, sid, start, end, "day", subuser=PK)

        async def series_minutes(s: Any) -> Any:
            day = func.substr(m.minute, 1, 10) if db.is_sqlite else func.date_trunc("day", m.minute)
            return (await s.execute(select(day, *sums).where(*where).group_by(day))).all()

        ms_r, tot = await best_ms(db, rolled)
        ms_m, ref = await best_ms(db, minutes_only)
        assert (tot.requests, tot.bytes_up, tot.bytes_down) == (int(ref[0]), int(ref[2]), int(ref[3]))
        ms_sr, _ = await best_ms(db, series_rolled)
        ms_sm, _ = await best_ms(db, series_minutes)
        print(f"{days} days x {hosts} hosts, window {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M}")
        print(f"totals:      rollups {ms_r:8.2f} ms   minutes only {ms_m:8.2f} ms")
        print(f"series/day:  rollups {ms_sr:8.2f} ms   minutes only {ms_sm:8.2f} ms")
    finally:
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
