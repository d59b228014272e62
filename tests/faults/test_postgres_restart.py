"""The real PostgreSQL server crashed and started again under traffic (issue 35.5): a server of the test's
own (own_postgres.py; the suite's is shared), two `proxyplane serve` processes and a `proxyplane gateway
--workers 2` node on it. Buyers order one after another with their idempotency keys (a 503 + Retry-After
is retried with the same key), a customer's proxy tunnels run through the node, and the server is stopped
with `pg_ctl -m immediate` (every backend killed: a crash) and started again. Goals: every order answered
201 or 503 + Retry-After, completed exactly once, the books hold; the node serves its known customer
throughout and every relayed byte reaches the store once (spooled while the store was gone); both APIs
order again soon after the store returns, without a restart; an MCP session opened on one API process
before the crash is served by the other after it (sessions are in the store)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.migrate import upgrade
from tests.cli.test_serve_startup_race import free_port as free_tcp_port
from tests.domains.stock.support import fresh_stock
from tests.gateway.clients import basic, connect_tunnel
from tests.gateway.conftest import free_port
from tests.gateway.processes import start_gateway, status, usage
from tests.gateway.test_node_limits import limited_rotating
from tests.gateway.test_store_static import eventually
from tests.support import Account

from .api import api_log, broken_books, buyer, services_of, start_api, stop, wait_ready
from .own_postgres import OwnPostgres, pg_bin
from .test_gateway_outage import collect
from .test_store_restart import Tally, _buy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("PROXYPLANE_TEST_DATABASE_URL") or pg_bin() is None,
        reason="PostgreSQL runs (its binaries start the test's own server)",
    ),
]
BUYERS = 10
DOWN_SECONDS = float(os.environ.get("PROXYPLANE_FAULT_RESTART_SECONDS", "3"))
RUN_SECONDS = float(os.environ.get("PROXYPLANE_FAULT_RUN_SECONDS", "2"))
CHUNK = b"r" * 5000
MCP = "/api/v1/mcp"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres(int(os.environ.get("PROXYPLANE_FAULT_PG_PORT") or free_tcp_port()))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def database_url(own_postgres: OwnPostgres) -> str:
    """This module's store is its own server (the fixtures `platform`, `client`, `account` use it)."""
    url = Settings(database_url=own_postgres.url).resolved_database_url()
    asyncio.run(upgrade(url))
    return url


async def test_postgres_crash_and_restart_under_orders_and_proxy_traffic(
    client: httpx.AsyncClient,
    platform: Platform,
    account: Account,
    tcp_echo,
    own_postgres: OwnPostgres,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    addresses = await fresh_stock(platform, "proxy_datacenter", "KZ", 200, capacity=100)
    buyers = [await buyer(platform, 100_000_000) for _ in range(BUYERS)]
    sid, auth = await limited_rotating(client, platform, account, 0)
    proxy_auth = basic(auth["login"], auth["password"])
    port = free_port(["127.0.0.1"])
    monkeypatch.setenv("PROXYPLANE_GATEWAY_METRICS_PORT", str(free_port(["127.0.0.1"])))
    proxy, target = ("127.0.0.1", port), f"127.0.0.1:{tcp_echo.port}"
    apis = [start_api(database_url, tmp_path / f"api{i}") for i in range(2)]
    node = start_gateway(database_url, tmp_path / "gw", port)
    node_log = collect(node)
    traffic = {"sent": 0, "served": 0, "refused": 0}

    async def tunnels(until: float) -> None:
        while time.perf_counter() < until:
            try:
                code, reader, writer = await connect_tunnel(proxy, target, proxy_auth)
            except OSError:
                traffic["refused"] += 1
                continue
            if code != 200:
                traffic["refused"] += 1
                writer.close()
                continue
            writer.write(CHUNK)
            assert await asyncio.wait_for(reader.readexactly(len(CHUNK)), 10) == CHUNK
            writer.close()
            traffic["sent"] += len(CHUNK)
            traffic["served"] += 1
            await asyncio.sleep(0.05)

    try:
        for i, (proc, api_port) in enumerate(apis):
            await wait_ready(proc, api_port, tmp_path / f"api{i}")

        async def node_ready() -> bool:
            return len([p for p in status(tmp_path / "gw").get("processes", []) if p["serving"]]) == 2

        await eventually(node_ready, within=60.0)
        before = await usage(platform, sid)
        session = await open_mcp_session(apis[0][1], buyers[0][1])
        https = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{p}", timeout=30) for _, p in apis]
        try:
            tally, back = Tally(), []
            until = time.perf_counter() + RUN_SECONDS + DOWN_SECONDS + RUN_SECONDS
            running = [
                asyncio.ensure_future(_buy(https[i % 2], k, tally, until, i % 2, back))
                for i, (_, k) in enumerate(buyers)
            ]
            proxying = asyncio.ensure_future(tunnels(until))
            await asyncio.sleep(RUN_SECONDS)
            ordered_before = len(tally.done)
            await asyncio.to_thread(own_postgres.crash)
            crashed = time.perf_counter()
            await asyncio.sleep(DOWN_SECONDS)
            await asyncio.to_thread(own_postgres.start_again)
            back.append(time.perf_counter())
            down_for = back[0] - crashed
            await asyncio.wait_for(asyncio.gather(*running, proxying), 120)
        finally:
            for http in https:
                await http.aclose()
        await platform.db.engine.dispose()  # this test's own pool met the crash too
        listed = await mcp_list_tools(apis[1][1], buyers[0][1], session)
        assert listed.status_code == 200 and "order_composite" in listed.text, listed.text[:500]
        expected = (before[0] + traffic["sent"], before[1] + traffic["sent"])

        async def all_usage_stored() -> bool:
            return await usage(platform, sid) == expected

        try:
            await eventually(all_usage_stored, within=60.0)
        except AssertionError:
            got = await usage(platform, sid)
            raise AssertionError(
                f"usage {got}, relayed {expected}\n" + b"".join(node_log).decode()[-3000:]
            ) from None
        await asyncio.sleep(2.5)  # another flush: nothing is applied twice
        assert await usage(platform, sid) == expected
        logs = "".join(api_log(tmp_path / f"api{i}") for i in range(2))
        assert not tally.unclear, (tally.unclear[:5], logs)
        assert all(proc.poll() is None for proc, _ in apis) and node.poll() is None  # never restarted
        assert traffic["refused"] == 0 and traffic["served"] > 0  # the known customer was served throughout
        assert tally.unavailable > 0  # the buyers saw the crash
        assert sorted(tally.first_ok_after) == [0, 1]
        recovered = max(tally.first_ok_after.values())
        assert recovered < 10.0 and tally.slowest_503 < 6.0, (recovered, tally.slowest_503)
        ids = [c for c, _ in buyers]
        stored = sorted([s for c in ids for s in await services_of(platform, c)])
        assert stored == sorted(tally.done.values())  # every order once, nothing without its answer
        assert await broken_books(platform, ids, addresses) == {}
        print(
            f"\nfault figures: PostgreSQL crashed (pg_ctl -m immediate) and started again after "
            f"{down_for:.1f} s, under {BUYERS} buyers on 2 API processes and a gateway node | orders "
            f"completed {len(tally.done)} ({ordered_before} before the crash), 503 + Retry-After answers "
            f"{tally.unavailable} (each retried with its key), other failures 0 | slowest 503 "
            f"{tally.slowest_503 * 1000:.0f} ms (goal < 1 s), both APIs ordering again {recovered:.2f} s "
            f"after the server (goal < 5 s) | proxy tunnels served {traffic['served']}, refused "
            f"{traffic['refused']} (goal 100 % served) | usage relayed {traffic['sent']} bytes, stored "
            f"{traffic['sent']}, lost 0 "
            f"(goal 0), applied twice 0 | services = orders, double charges 0, books hold | an MCP session"
            " opened before the crash served after it by the other API process",
            flush=True,
        )
    finally:
        for proc, _ in apis:
            stop(proc)
        if node.poll() is None:
            node.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(node.wait, 30)
            except Exception:
                node.kill()
                node.wait()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def open_mcp_session(port: int, key: str) -> str:
    """A 2025-11-25 session (the client declares elicitation) opened on this API process: its id."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "faults", "version": "1"},
        },
    }
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        opened = await http.post(MCP, json=init, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
    assert opened.status_code == 200 and opened.headers.get("mcp-session-id"), opened.text
    return opened.headers["mcp-session-id"]


async def mcp_list_tools(port: int, key: str, session: str) -> httpx.Response:
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {key}",
        "Mcp-Session-Id": session,
        "MCP-Protocol-Version": "2025-11-25",
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        return await http.post(MCP, json=listing, headers=headers)
