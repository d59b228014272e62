"""Many API processes are one MCP server (issue 35.3): two `proxyplane serve` processes on one store, the
official MCP client in front of both through a transport that sends every tool call to one process and
every other request (initialize, the client's answers, the session's end) to the other. A 2025-11-25
session opened on one is served by the other; the question a spending tool asks goes out from the process
running the call and its answer, arriving at the other process, reaches it; the process running the calls
is SIGKILLed and started again, and the same session goes on (asks, charges once); the client's DELETE ends
the session on every process. A 2026-07-28 listen stream on one process gets the account's event from a
spend on the other."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ResourceUpdated
from mcp_types import ElicitRequestFormParams

from proxyplane.adapters.mcp.limits import LIMITS_URI
from proxyplane.platform import Platform
from tests.adapters.mcp.test_confirm_spending import Person, confirming_key, order
from tests.adapters.mcp.test_limits import capped_key
from tests.adapters.mcp.test_orders import MIX, balance
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.faults.api import start_api, stop, wait_ready
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
MCP = "/api/v1/mcp"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Split(httpx2.AsyncBaseTransport):
    """Sends each request to the port `route(request)` names, and records which port served what."""

    def __init__(self, route: Callable[[httpx2.Request], int]) -> None:
        self.route = route
        self.inner = httpx2.AsyncHTTPTransport()
        self.served: list[tuple[int, str]] = []  # (port, what: the JSON-RPC method, "answer" or the verb)
        self.sessions: set[str] = set()  # the Mcp-Session-Id values sent

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.route(request)
        self.served.append((port, what(request)))
        if "mcp-session-id" in request.headers:
            self.sessions.add(request.headers["mcp-session-id"])
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def what(request: httpx2.Request) -> str:
    if request.method != "POST":
        return request.method
    body = json.loads(request.content)
    return str(body.get("method", "answer")) if isinstance(body, dict) else "batch"


@contextlib.asynccontextmanager
async def apis(database_url: str, home: Path) -> AsyncIterator[list]:
    """Two API processes on one store: [[process, port, home], ...] (a test may replace a process)."""
    procs = [[*start_api(database_url, home / f"api{i}"), home / f"api{i}"] for i in range(2)]
    try:
        for proc, port, where in procs:
            await wait_ready(proc, port, where)
        yield procs
    finally:
        for proc, _, _ in procs:
            stop(proc)


async def store_has_session(platform: Platform, session_id: str) -> bool:
    from proxyplane.domains.agent import mcp_state
    from proxyplane.ops import Caller, invoke

    found = await invoke(
        platform, mcp_state.FIND, Caller.anonymous(), mcp_state.SessionRef(session_id=session_id)
    )
    return bool(found.found)


async def test_a_session_and_its_questions_span_processes_and_survive_a_restart(
    platform: Platform, account: Account, database_url: str, tmp_path: Path
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100_000)
    key = await confirming_key(account)  # every spend must be confirmed: refused where nobody can be asked
    person = Person("accept")
    async with apis(database_url, tmp_path) as procs:
        calls, rest = procs[0][1], procs[1][1]
        split = Split(lambda r: calls if what(r) == "tools/call" else rest)
        async with httpx2.AsyncClient(transport=split, headers=bearer(key), timeout=30) as hc:
            url = f"http://127.0.0.1:{rest}{MCP}"
            async with Client(
                streamable_http_client(url, http_client=hc), mode="legacy", elicitation_callback=person
            ) as client:
                quote = await client.call_tool("quote_composite", MIX)
                first = await client.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
                (session_id,) = split.sessions
                procs[0][0].kill()  # the process running the calls dies; the same port again
                procs[0][0].wait()
                procs[0][0], _ = start_api(database_url, procs[0][2], port=calls)
                await wait_ready(procs[0][0], calls, procs[0][2])
                second = await client.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
                listed = await client.list_tools()
                in_store = await store_has_session(platform, session_id)
            ended = not await store_has_session(platform, session_id)
    assert quote.structured_content is not None
    total = quote.structured_content["total_cents"]
    assert first.is_error is False, text(first)
    assert second.is_error is False, text(second)
    assert len(person.asked) == 2 and all(isinstance(q, ElicitRequestFormParams) for q in person.asked)
    assert await balance(account) == 100_000 - 2 * total  # each order confirmed once and charged once
    assert any(t.name == "order_composite" for t in listed.tools)
    assert in_store and ended  # recorded while open; the client's DELETE ended it
    calls_served = {w for p, w in split.served if p == calls}
    rest_served = {w for p, w in split.served if p == rest}
    assert calls_served == {"tools/call"}
    assert {"initialize", "notifications/initialized", "answer", "tools/list", "DELETE"} <= rest_served

    assert split.sessions == {session_id}  # one session all along, across both processes and the restart


async def test_a_listen_stream_gets_the_accounts_event_from_a_spend_on_another_process(
    platform: Platform, account: Account, database_url: str, tmp_path: Path
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    async with (
        apis(database_url, tmp_path) as procs,
        httpx2.AsyncClient(headers=bearer(key), timeout=30) as hc,
    ):
        listening, buying = (f"http://127.0.0.1:{p[1]}{MCP}" for p in procs)
        async with Client(streamable_http_client(listening, http_client=hc), mode="2026-07-28") as listener:
            async with listener.listen(resource_subscriptions=[LIMITS_URI]) as stream:
                quote = await listener.call_tool("quote_composite", MIX)
                assert quote.structured_content is not None
                total = quote.structured_content["total_cents"]
                await account.credit(total + 50)
                capped = await capped_key(account, total + 10)
                threshold = {"balance_low_threshold_cents": 100}
                assert (await listener.call_tool("update_notification_settings", threshold)).is_error is False
                async with httpx2.AsyncClient(headers=bearer(capped), timeout=30) as buyer_http:
                    transport = streamable_http_client(buying, http_client=buyer_http)
                    async with Client(transport, mode="2026-07-28") as buyer:
                        body = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
                        ok = await buyer.call_tool("order_composite", {**body, "max_total_cents": total})
                with anyio.fail_after(20):
                    event = await stream.__anext__()
    assert ok.is_error is False, text(ok)
    assert event == ResourceUpdated(uri=LIMITS_URI)
