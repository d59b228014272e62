"""Issue 36: what a static order per city costs beside one per country, in one process against a real
database (wall ms, best of 7 on a shared machine; the database server's time included).

    PYTHONPATH=src .venv/bin/python bench/city_orders.py sqlite:////tmp/pp_city_orders.db
    PYTHONPATH=src .venv/bin/python bench/city_orders.py postgresql://postgres@127.0.0.1:56432/<yours>

Adds N (default 50,000) dedicated IPs in PL spread over 50 cities of 5 regions, with their geo rows,
then measures, for a country segment, a city and a region of 10 IPs: the quote (`orders.price`: the
availability read; a place: the grouped scan of the country's stock joined to ip_geo), and the quote
plus the place's resolution plus the allocation's pick (storage/repos/stock.pick_sql: FOR UPDATE SKIP
LOCKED on PostgreSQL, with the place's EXISTS), rolled back. The rows are retired and their geo rows
deleted afterwards (the database is not emptied: point it at a database of your own)."""

from __future__ import annotations

import os
import sys

# run as `python bench/city_orders.py`, bench/platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import asyncio  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402

from sqlalchemy import delete, insert, text, update  # noqa: E402

from proxyplane.core.clock import utcnow  # noqa: E402
from proxyplane.core.place_names import geo_key  # noqa: E402
from proxyplane.domains.orders import quoting  # noqa: E402
from proxyplane.domains.orders.places import place_segment, resolve  # noqa: E402
from proxyplane.domains.pricing import Segment  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.engine_choice import is_postgres  # noqa: E402
from proxyplane.storage.migrate import upgrade  # noqa: E402
from proxyplane.storage.models import IpGeo, StockIp  # noqa: E402
from proxyplane.storage.repos.stock import pick_sql  # noqa: E402

KIND, COUNTRY = "proxy_personal", "PL"


async def best(fn: Callable[[], Awaitable[object]], n: int = 7) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def resolved(url: str) -> str:
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url[len("postgresql://") :]
    return "sqlite+aiosqlite:///" + url[len("sqlite:///") :] if url.startswith("sqlite:///") else url


async def main(url: str, size: int) -> None:
    url = resolved(url)
    await upgrade(url)
    db = Database(url)
    tag = uuid.uuid4().hex[:6]
    addresses = [f"127.{100 + (i >> 16)}.{i >> 8 & 255}.{i & 255}" for i in range(1, size + 1)]
    async with db.unit_of_work() as uow:
        await uow.session.execute(update(StockIp).where(StockIp.product_kind == KIND,
                                                        StockIp.country_maxmind == COUNTRY,
                                                        StockIp.retired_at.is_(None)).values(retired_at=utcnow()))
        for i in range(0, size, 10_000):
            part = addresses[i : i + 10_000]
            await uow.session.execute(insert(StockIp), [
                {"address": a, "product_kind": KIND, "country_maxmind": COUNTRY, "country_ripe": COUNTRY,
                 "capacity": 1, "assigned_count": 0} for a in part])
            await uow.session.execute(insert(IpGeo), [
                {"address": a, "geo_source": "maxmind", "country": COUNTRY, "region": f"Region {j % 5} {tag}",
                 "region_code": str(j % 5), "city": f"City {j % 50} {tag}", "asn": None, "org": None,
                 "city_key": geo_key(f"City {j % 50} {tag}"),
                 "overridden": False, "updated_at": utcnow()} for j, a in enumerate(part, start=i)])
        await uow.commit()
    cases: list[tuple[str, tuple[str, int] | Segment]] = [
        ("country", (COUNTRY, 10)),
        ("city", place_segment(COUNTRY, 10, None, f"City 7 {tag}")),
        ("region", place_segment(COUNTRY, 10, f"Region 3 {tag}", None)),
    ]
    print(f"{url.split(':')[0]}: {size} IPs in {COUNTRY}, 50 cities")
    try:
        for name, seg in cases:
            async def quote(seg: tuple[str, int] | Segment = seg) -> None:
                async with db.unit_of_work(write=False) as uow:
                    await quoting.price(uow.session, KIND, "maxmind", 1, [seg])

            async def pick(seg: tuple[str, int] | Segment = seg) -> None:
                async with db.unit_of_work() as uow:  # never committed: the row locks end with it
                    priced = await quoting.price(uow.session, KIND, "maxmind", 1, [seg])
                    placed = await resolve(uow.session, KIND, "maxmind", priced.quote.lines)
                    postgres = is_postgres(uow.session)
                    sql, params = pick_sql([(COUNTRY, 10)], "country_maxmind", postgres, False, False,
                                           placed[0].filter if placed else None)
                    got = (await uow.session.execute(text(sql), {**params, "kind": KIND})).all()
                    assert len(got) == 10, len(got)

            q, t = await best(quote), await best(pick)
            print(f"  {name:8s} quote {q:7.1f} ms   quote + place + pick of 10 (locked) {t:7.1f} ms")
    finally:
        async with db.unit_of_work() as uow:
            for i in range(0, size, 10_000):
                part = addresses[i : i + 10_000]
                await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(part)))
                await uow.session.execute(update(StockIp).where(StockIp.address.in_(part)).values(
                    retired_at=utcnow()))
            await uow.commit()
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 50_000))
