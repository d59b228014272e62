"""What one activity-log row (issue 34.5, `account_activity`) costs a write operation: `update_profile`
(one small UPDATE: the cheapest write, so the row's share is as large as it gets) run through invoke() as
an API key's call, with invoke()'s activity note on (as shipped) and off (`activity.noted` answering
False), in alternating blocks so that both see the same machine load.

    python bench/activity_row.py                                    # a fresh SQLite file
    python bench/activity_row.py --pg postgresql://postgres@127.0.0.1:56432/h1 --calls 1000

PostgreSQL: the database is migrated to the head if needed, NOT emptied (one new customer is added; its
rows stay). Reported: wall time per call (median, p90) and process CPU per call of each variant, the
difference, and how many activity rows the "on" blocks wrote (must equal their calls).
"""

from __future__ import annotations

import os
import sys

# run as `python bench/activity_row.py`, bench/platform.py would shadow the standard library's module
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402

from sqlalchemy import func, select  # noqa: E402

from proxyplane.core.scopes import ALL_SCOPES  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.domains.accounts.ops import UPDATE_PROFILE, ProfileUpdate  # noqa: E402
from proxyplane.domains.accounts.service import create_customer  # noqa: E402
from proxyplane.domains.apikeys.service import create_key  # noqa: E402
from proxyplane.domains.team import activity  # noqa: E402
from proxyplane.ops import Caller, invoke  # noqa: E402
from proxyplane.platform import Platform  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402
from proxyplane.storage.migrate import upgrade  # noqa: E402
from proxyplane.storage.models.team import AccountActivity  # noqa: E402

NOTED = activity.noted


def never(*_: object) -> bool:
    return False


async def rows_of(db: Database, customer_id: int) -> int:
    async with db.unit_of_work(write=False) as uow:
        found = await uow.session.execute(
            select(func.count()).select_from(AccountActivity).where(AccountActivity.account_id == customer_id)
        )
        return int(found.scalar_one())


async def run(url: str, home: Path, calls: int, blocks: int) -> None:
    await upgrade(url)
    platform = Platform(Settings(home=home, database_url=url, secret_key="bench"), Database(url))
    db = platform.db
    async with db.unit_of_work() as uow:
        customer = await create_customer(uow.session, f"bench-{uuid.uuid4().hex[:8]}@example.com", "pw pw 12")
        key, _ = await create_key(uow.session, customer.id, "bench", frozenset(ALL_SCOPES))
        await uow.commit()
        caller = Caller(customer.id, key.id, frozenset(ALL_SCOPES), "127.0.0.1", "rest")
    walls: dict[str, list[float]] = {"on": [], "off": []}
    cpu = {"on": 0.0, "off": 0.0}
    count = 0

    async def call() -> None:
        nonlocal count
        count += 1
        await invoke(platform, UPDATE_PROFILE, caller, ProfileUpdate(name=f"bench {count}"))

    for _ in range(50):  # warm-up: pool, statement caches
        await call()
    before = await rows_of(db, customer.id)
    for _ in range(blocks):
        for variant in ("on", "off"):
            activity.noted = NOTED if variant == "on" else never  # type: ignore[assignment]
            cpu0 = time.process_time()
            for _ in range(calls // blocks):
                t0 = time.perf_counter()
                await call()
                walls[variant].append(time.perf_counter() - t0)
            cpu[variant] += time.process_time() - cpu0
    activity.noted = NOTED  # type: ignore[assignment]
    written = await rows_of(db, customer.id) - before
    engine = url.split(":", 1)[0].split("+", 1)[0]
    p50 = {}
    for variant in ("on", "off"):
        ordered = sorted(walls[variant])
        n = len(ordered)
        p50[variant] = statistics.median(ordered) * 1e6
        print(
            f"{engine} note {variant}: {n} calls: wall p50 {p50[variant]:.0f} us, "
            f"p90 {ordered[int(n * 0.9)] * 1e6:.0f} us, CPU {cpu[variant] / n * 1e6:.0f} us/call"
        )
    n = len(walls["on"])
    print(
        f"{engine}: one activity row costs {p50['on'] - p50['off']:.0f} us wall (p50 difference), "
        f"{(cpu['on'] - cpu['off']) / n * 1e6:.0f} us CPU per call; "
        f"rows written {written} for {n} noted calls"
    )
    data = ProfileUpdate(name="bench")
    t0 = time.process_time()
    for _ in range(10_000):
        activity.detail_of(data)
    print(
        "of which the row's detail (input without secrets, as JSON): "
        f"{(time.process_time() - t0) * 100:.1f} us CPU"
    )
    await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", help="a PostgreSQL URL of your own (migrated if needed, not emptied)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per variant")
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.pg or f"sqlite+aiosqlite:///{tmp}/activity.db"
        if url.startswith("postgresql://"):
            url = "postgresql+asyncpg://" + url.split("://", 1)[1]
        asyncio.run(run(url, Path(tmp), args.calls, args.blocks))


if __name__ == "__main__":
    main()
