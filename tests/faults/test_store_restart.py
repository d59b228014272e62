"""The store restarted under 20 concurrent buyers (issue 35.2, 35.5): two `proxyplane serve` processes on
PostgreSQL behind a link the test cuts (every connection reset, new ones refused: a database host
restarting) and restores. Each buyer places orders one after another, each with its own idempotency key,
and retries an order with the same key while it is answered 503 + Retry-After. Goals: every answer is a
201 or a clear 503 (JSON error, Retry-After) within 1 s; every order completes exactly once; the books
hold; both processes serve again soon after the store returns, without a restart; a restart while the
API is idle (its pooled connections all dead) fails no request. bench/faults.py runs it longer."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock

from .api import api_log, broken_books, buyer, order_body, place, services_of, start_api, stop, wait_ready
from .support import StoreLink

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("PROXYPLANE_TEST_DATABASE_URL"), reason="a store shared by processes: PostgreSQL"
    ),
]
BUYERS = 20
DOWN_SECONDS = float(os.environ.get("PROXYPLANE_FAULT_RESTART_SECONDS", "2"))
RUN_SECONDS = float(os.environ.get("PROXYPLANE_FAULT_RUN_SECONDS", "2"))  # of orders before and after


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Tally:
    def __init__(self) -> None:
        self.done: dict[str, str] = {}  # idempotency key -> service id
        self.unavailable = 0  # 503 + Retry-After answers, each retried with its key
        self.unclear: list[str] = []  # anything else: a broken promise
        self.slowest = 0.0  # seconds of the slowest answer
        self.slowest_503 = 0.0  # of the slowest 503
        self.last_503 = 0.0  # when (perf_counter) the last 503 was answered
        self.first_ok_after: dict[int, float] = {}  # API index -> first 201 after the store came back


async def _buy(http: httpx.AsyncClient, key: str, tally: Tally, until: float, index: int, back: list) -> None:
    while time.perf_counter() < until:
        body = order_body("KZ", 8)
        while True:
            start = time.perf_counter()
            try:
                r = await place(http, key, body)
            except httpx.HTTPError as exc:
                tally.unclear.append(f"{type(exc).__name__}: {exc}")
                return
            took = time.perf_counter() - start
            tally.slowest = max(tally.slowest, took)
            if r.status_code == 201:
                tally.done[body["idempotency_key"]] = r.json()["service"]["service_id"]
                if back and index not in tally.first_ok_after:
                    tally.first_ok_after[index] = time.perf_counter() - back[0]
                break
            if r.status_code == 503 and r.headers.get("retry-after", "").isdigit():
                assert r.json()["error"] == "service_unavailable", r.text
                tally.unavailable += 1
                tally.slowest_503 = max(tally.slowest_503, took)
                tally.last_503 = time.perf_counter()
                await asyncio.sleep(0.25)  # a client honouring Retry-After waits longer; same key
                continue
            tally.unclear.append(f"{r.status_code} {r.text[:300]}")
            return


async def test_store_restart_under_twenty_buyers(
    platform: Platform, database_url: str, tmp_path: Path
) -> None:
    addresses = await fresh_stock(platform, "proxy_datacenter", "KZ", 400, capacity=100)
    buyers = [await buyer(platform, 100_000_000) for _ in range(BUYERS)]
    link = StoreLink.for_url(database_url)
    await link.up()
    apis = [start_api(link.url(database_url), tmp_path / f"api{i}") for i in range(2)]
    try:
        for i, (proc, port) in enumerate(apis):
            await wait_ready(proc, port, tmp_path / f"api{i}")
        https = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) for _, port in apis]
        try:
            # a restart while the API is idle: every pooled connection is dead, no request may fail
            first = await asyncio.gather(
                *(place(https[i % 2], k, order_body("KZ", 8)) for i, (_, k) in enumerate(buyers))
            )
            assert all(r.status_code == 201 for r in first), [r.text for r in first]
            await link.cut()
            await link.up()
            idle = await asyncio.gather(
                *(place(https[i % 2], k, order_body("KZ", 8)) for i, (_, k) in enumerate(buyers))
            )
            idle_failed = [f"{r.status_code} {r.text[:200]}" for r in idle if r.status_code != 201]
            assert not idle_failed, idle_failed
            placed_idle = [r.json()["service"]["service_id"] for r in [*first, *idle]]
            # the restart under load
            tally, back = Tally(), []
            until = time.perf_counter() + RUN_SECONDS + DOWN_SECONDS + RUN_SECONDS
            running = [
                asyncio.ensure_future(_buy(https[i % 2], k, tally, until, i % 2, back))
                for i, (_, k) in enumerate(buyers)
            ]
            await asyncio.sleep(RUN_SECONDS)
            before = len(tally.done)
            await link.cut()
            await asyncio.sleep(DOWN_SECONDS)
            await link.up()
            back.append(time.perf_counter())
            await asyncio.wait_for(asyncio.gather(*running), 120)
        finally:
            for http in https:
                await http.aclose()
        logs = "".join(api_log(tmp_path / f"api{i}") for i in range(2))
        assert not tally.unclear, (tally.unclear[:5], logs)
        assert all(proc.poll() is None for proc, _ in apis)  # served throughout, never restarted
        assert tally.unavailable > 0  # the outage was seen by the buyers
        assert sorted(tally.first_ok_after) == [0, 1]  # both processes serve again
        recovered = max(tally.first_ok_after.values())
        # bounded answers (the goal is 1 s: printed; the bounds asserted leave room for a shared CI host)
        assert recovered < 5.0 and tally.slowest_503 < 2.0 and tally.slowest < 10.0, (
            recovered,
            tally.slowest_503,
            tally.slowest,
        )
        ids = [c for c, _ in buyers]
        stored = sorted([s for c in ids for s in await services_of(platform, c)])
        expected = sorted([*placed_idle, *tally.done.values()])
        assert stored == expected  # every order once, nothing without its answer
        assert await broken_books(platform, ids, addresses) == {}
        print(
            f"\nfault figures: store restarted ({DOWN_SECONDS:.0f} s down) under {BUYERS} buyers, 2 API "
            f"processes | orders completed {len(tally.done)} ({before} before the cut) | 503 + Retry-After "
            f"answers {tally.unavailable} (each retried with its key), other failures 0 | slowest 503 "
            f"{tally.slowest_503 * 1000:.0f} ms, slowest answer {tally.slowest * 1000:.0f} ms (goal < 1 s) | "
            f"both APIs ordering again {recovered:.2f} s after "
            f"the store (goal < 5 s; last 503 {max(0.0, tally.last_503 - back[0]):.2f} s after), without a "
            f"restart | idle restart: {len(buyers)} orders, 0 failed "
            f"(goal 0) | services = orders, double charges 0, books hold",
            flush=True,
        )
    finally:
        for proc, _ in apis:
            stop(proc)
        await link.cut()
