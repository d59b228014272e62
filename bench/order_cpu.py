"""CPU per order request in one process (issue 15.1): the real app over httpx's ASGI transport, one
customer, N sequential orders of 7-12 IPs, then N `GET /customer/wallet/balance`; prints the process CPU
(time.process_time: the app, SQLAlchemy/driver and the in-process client; not the database server) and
the wall time per request. A shared machine stretches wall time far more than CPU time.

    .venv/bin/python bench/order_cpu.py postgresql://postgres@127.0.0.1:55432/pp_a_bench 300
    .venv/bin/python bench/order_cpu.py sqlite:////tmp/pp_order_cpu.db 300
    .venv/bin/python bench/order_cpu.py <url> 300 /tmp/order.txt  # + pyinstrument profile (pip install it)
    .venv/bin/python bench/order_cpu.py <url> 300 --parts  # + the same order one layer lower each time

`--parts` splits an order's CPU by removing one layer at a time (same orders, same process): the whole
REST request; `invoke()` called directly (no HTTP/ASGI, FastAPI, key check, body validation, JSON);
`place_order` in a bare unit of work (no idempotency claim/store, no response model); one trivial
statement per unit of work (the floor: pool checkout, BEGIN, one round trip, COMMIT); eleven (the
difference is ten statements' cost through the session).

The database is emptied first (PostgreSQL: its public schema is DROPPED; SQLite: the file is removed).
"""

from __future__ import annotations

import os
import sys

# run as `python bench/order_cpu.py`, bench/platform.py would shadow the standard library's `platform`
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import asyncio  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402

from bench.fresh_db import fresh_database, one_buyer, order_body  # noqa: E402
from proxyplane.core.settings import Settings  # noqa: E402
from proxyplane.platform import Platform  # noqa: E402
from proxyplane.storage.engine import Database  # noqa: E402


def _order_in() -> Any:
    from proxyplane.domains.orders.ops import OrderIn

    return OrderIn(**order_body())


def layers(platform: Platform, customer_id: int, key: str) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    """The same order one layer lower each time (`--parts`)."""
    from proxyplane.domains.apikeys.service import authenticate
    from proxyplane.domains.orders import service as orders
    from proxyplane.ops import REGISTRY, Caller, invoke

    op = REGISTRY["order_composite"]
    caller: list[Caller] = []

    async def direct_invoke() -> None:
        if not caller:
            principal = await authenticate(platform.db, key, "127.0.0.9")
            assert principal is not None
            caller.append(Caller(principal.customer_id, principal.key_id, principal.scopes, "127.0.0.9"))
        await invoke(platform, op, caller[0], _order_in())

    async def bare_place_order() -> None:
        data = _order_in()
        async with platform.db.unit_of_work() as uow:
            await orders.place_order(
                uow.session,
                platform.secrets,
                platform.processor(),
                customer_id=customer_id,
                product_kind=data.product_kind,
                geo_source=data.geo_source,
                period_months=data.period_months,
                segments=[(s.country, s.count) for s in data.segments],
                whitelist_ips=data.whitelist_ips,
                use_balance=True,
                payment_method="card",
                idempotency_key=data.idempotency_key,
            )
            await uow.commit()

    from sqlalchemy import text

    one = text("SELECT 1")

    async def one_statement() -> None:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(one)
            await uow.commit()

    async def eleven_statements() -> None:  # minus the above: ten statements' cost
        async with platform.db.unit_of_work() as uow:
            for _ in range(11):
                await uow.session.execute(one)
            await uow.commit()

    return [
        ("invoke() direct", direct_invoke),
        ("place_order bare", bare_place_order),
        ("1 statement", one_statement),
        ("11 statements", eleven_statements),
    ]


async def main(url: str, n: int, profile: str | None = None, parts: bool = False) -> None:
    from proxyplane.app import create_app

    url = Settings(database_url=url).resolved_database_url()
    await fresh_database(url)
    with tempfile.TemporaryDirectory(prefix="pp-order-cpu-") as home:
        settings = Settings(
            home=home, database_url=url, secret_key="bench", public_base_url="http://testserver"
        )
        platform = Platform(settings, Database(url))
        customer_id, key = await one_buyer(platform.db, 5, 500_000_000, "cpu")
        headers = {"Authorization": f"Bearer {key}"}
        transport = httpx.ASGITransport(app=create_app(platform), client=("127.0.0.9", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:

            async def order() -> None:
                r = await client.post("/api/v1/billing/composite/order", json=order_body(), headers=headers)
                assert r.status_code == 201, r.text

            async def balance() -> None:
                r = await client.get("/api/v1/customer/wallet/balance", headers=headers)
                assert r.status_code == 200, r.text

            calls: list[tuple[str, Callable[[], Awaitable[None]]]] = [
                ("order", order),
                ("balance GET", balance),
            ]
            if parts:
                calls += layers(platform, customer_id, key)
            for name, call in calls:
                for _ in range(20):  # warm-up: statement caches, pool
                    await call()
                prof = None
                if profile and name == "order":
                    from pyinstrument import Profiler  # a tool of the profile run only (not installed by CI)

                    prof = Profiler(interval=0.0005, async_mode="disabled")
                wall, cpu = time.perf_counter(), time.process_time()
                if prof is not None:
                    prof.start()
                for _ in range(n):
                    await call()
                if prof is not None:
                    prof.stop()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                if prof is not None and profile:
                    with open(profile, "w") as out:
                        every = bool(os.environ.get("PROFILE_ALL"))  # every frame, libraries included
                        out.write(prof.output_text(unicode=False, color=False, show_all=every))
                print(
                    f"{name}: CPU {cpu / n * 1000:.2f} ms, wall {wall / n * 1000:.2f} ms per request (n={n})"
                )
        await platform.close()
    print("load average (1/5/15 min): " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--parts"]
    asyncio.run(
        main(
            args[0],
            int(args[1]) if len(args) > 1 else 300,
            args[2] if len(args) > 2 else None,
            parts="--parts" in sys.argv,
        )
    )
