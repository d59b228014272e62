"""Cost of the sub-user metering in a usage flush (issue 18): one flush carrying one minute row for each of
N sub-users of one service (half of them crossing 80 % of a byte limit, so the threshold UPDATEs and the
events run too), timed inside its transaction, with the statements counted; then a flush with no crossing.
Prints statements per flush and microseconds per sub-user (wall time; a shared machine stretches it).

    .venv/bin/python bench/subuser_metering.py postgresql://postgres@127.0.0.1:55439/pp_b_bench 10 100 1000
    .venv/bin/python bench/subuser_metering.py sqlite:////tmp/pp_subuser_metering.db 10 100 1000 5000

The database is emptied first (PostgreSQL: its public schema is DROPPED; SQLite: the file is removed).
"""

from __future__ import annotations

import os
import sys

# run as `python bench/subuser_metering.py`, bench/platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import asyncio  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from typing import Any  # noqa: E402

from sqlalchemy import event, insert, select  # noqa: E402

from bench.fresh_db import fresh_database  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.platform import Platform  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402

LIMIT = 1_000_000


async def subusers(platform: Platform, customer_id: int, n: int) -> list[int]:
    from proxyplane.storage.models import Service
    from proxyplane.storage.models.subusers import ServiceSubuser

    sid = uuid.uuid4()
    sealed = platform.secrets.encrypt("bench-password")
    async with platform.db.unit_of_work() as uow:
        s = uow.session
        s.add(
            Service(
                service_id=sid,
                customer_id=customer_id,
                product_kind="proxy_rotating",
                status="active",
                login=f"svc{sid.hex[:12]}",
                password_enc=sealed,
            )
        )
        await s.flush()
        rows = [
            {
                "subuser_id": uuid.uuid4(),
                "service_id": sid,
                "login": f"b{sid.hex[:8]}{i}",
                "password_enc": sealed,
                "enabled": True,
                "traffic_limit_bytes": LIMIT,
                "used_bytes": 0,
                "used_requests": 0,
                "limit_reached": False,
                "notified_pct": 0,
                "created_at": datetime.now(UTC),
                "updated_at": datetime.now(UTC),
            }
            for i in range(n)
        ]
        await s.execute(insert(ServiceSubuser), rows)
        pks = list(
            (await s.execute(select(ServiceSubuser.id).where(ServiceSubuser.service_id == sid))).scalars()
        )
        await uow.commit()
    return pks


async def flush(platform: Platform, pks: list[int], minute: datetime, down: Any) -> tuple[int, float]:
    from proxyplane.domains.subusers.metering import apply_usage

    minutes = [
        {
            "subuser_pk": pk,
            "minute": minute,
            "host": "origin.example",
            "requests": 1,
            "connections": 1,
            "bytes_up": 100,
            "bytes_down": down(i),
            "errors": 0,
        }
        for i, pk in enumerate(pks)
    ]
    seen: list[str] = []

    def count(*args: Any) -> None:
        seen.append(args[2])

    engine = platform.db.engine.sync_engine
    async with platform.db.unit_of_work() as uow:
        event.listen(engine, "before_cursor_execute", count)
        t0 = time.perf_counter()
        await apply_usage(uow.session, minutes, [])
        elapsed = time.perf_counter() - t0
        event.remove(engine, "before_cursor_execute", count)
        await uow.commit()
    return len(seen), elapsed


async def main(url: str, sizes: list[int]) -> None:
    from proxyplane.domains.accounts import service as accounts

    url = Settings(database_url=url).resolved_database_url()
    await fresh_database(url)
    with tempfile.TemporaryDirectory(prefix="pp-subuser-metering-") as home:
        platform = Platform(Settings(home=home, database_url=url, secret_key="bench"), Database(url))
        async with platform.db.unit_of_work() as uow:
            customer = await accounts.create_customer(
                uow.session, "bench@example.com", "bench password 1", "B"
            )
            await uow.commit()
        minute = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
        print(f"{'sub-users':>10} {'flush':>10} {'statements':>11} {'ms':>9} {'us/sub-user':>12}")
        for n in sizes:
            pks = await subusers(platform, customer.id, n)
            # half cross 80 % of their limit: threshold UPDATEs move rows, n/2 events (no endpoint)
            crossing = await flush(platform, pks, minute, lambda i: LIMIT * 85 // 100 if i % 2 else 1000)
            quiet = await flush(platform, pks, minute + timedelta(minutes=1), lambda i: 1000)
            for name, (stmts, secs) in (("crossing", crossing), ("quiet", quiet)):
                print(f"{n:>10} {name:>10} {stmts:>11} {secs * 1000:>9.1f} {secs * 1e6 / n:>12.1f}")
        await platform.db.dispose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], [int(a) for a in sys.argv[2:]] or [10, 100, 1000]))
