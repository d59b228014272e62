"""Dashboard usage chart: cost of one chart read (series + bars) per window, as the page reads it now
(UTC-aligned bars from the fitting resolution) and as it read before (every minute of the window), on a
service metered every minute for 8 days (bench/platform_data.generate_usage).

    .venv/bin/python bench/usage_chart.py --db postgresql+asyncpg://postgres@127.0.0.1:55432/pp_b_bench
"""

from __future__ import annotations

import os
import sys

# run as a script, bench/ is sys.path[0]: its platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import asyncio  # noqa: E402
from datetime import timedelta  # noqa: E402
from typing import Any  # noqa: E402

from bench.platform_data import BASE, drop_usage, generate_usage, p50_ms  # noqa: E402
from proxyplane.adapters.web.charts import WINDOWS, usage_chart  # noqa: E402
from proxyplane.domains.usage import service as usage  # noqa: E402
from proxyplane.domains.usage.ops import SeriesPoint, counters  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.migrate import upgrade  # noqa: E402

DAYS = 8


async def run(url: str, repeat: int) -> list[tuple[str, str]]:
    await upgrade(url)
    db = Database(url)
    dense, every = await generate_usage(db, {"dense": 1, "sparse": 20, "days": DAYS})
    sid, now = dense[0], BASE + timedelta(days=DAYS - 1, hours=13, minutes=47)
    out = []
    try:
        for name, w in WINDOWS.items():
            for label, resolution, (start, end), bar in (
                ("now", w.resolution, w.bounds(now), w.bar),
                ("before (per minute)", "minute", (now - w.length, now), w.length / 48),
            ):

                async def chart(
                    session: Any, r: str = resolution, s: Any = start, e: Any = end, b: Any = bar
                ) -> None:
                    points = await usage.series(session, sid, s, e, r)
                    drawn = [SeriesPoint(minute=m, **counters(t).model_dump()) for m, t in points]
                    assert usage_chart(drawn, s, e, b).total_requests > 0

                out.append(
                    (f"chart {name} {label}, series per {resolution}", str(await p50_ms(db, repeat, chart)))
                )
    finally:
        await drop_usage(db, every)
        await db.dispose()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="sqlite+aiosqlite:////tmp/usage_chart_bench.db")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    for label, value in asyncio.run(run(args.db, args.repeat)):
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
