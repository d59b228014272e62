"""The store's side of shared MCP state (issue 35.3), in process: two apps on one store stand for two API
processes. A session opened on one is served by the other for its own key only (another key, or an answer
sent with another key, is answered as if the session did not exist); the relay hands each message to the
other processes once, never back to its writer, and a message whose insert commits after a later one was
read (PostgreSQL: ids come from a sequence) still arrives."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
import pytest
from fastapi import FastAPI

from proxyplane.adapters.mcp.relay import Relay
from proxyplane.core.clock import utcnow
from proxyplane.domains.agent import mcp_state
from proxyplane.platform import Platform
from proxyplane.storage.repos import mcp_sessions as repo
from tests.adapters.mcp.conftest import http_client
from tests.adapters.mcp.test_confirm_sessions import INIT_HEADERS, initialize
from tests.support import Account

pytestmark = pytest.mark.anyio
MCP = "/api/v1/mcp"


@contextlib.asynccontextmanager
async def running(platform: Platform) -> AsyncIterator[FastAPI]:
    from proxyplane.app import create_app

    app = create_app(platform)
    async with app.router.lifespan_context(app):
        yield app


async def test_a_session_opened_on_one_process_serves_its_key_on_another_only(
    platform: Platform, account: Account
) -> None:
    key, other = await account.key(), await account.key()
    async with running(platform) as one, running(platform) as two:
        async with http_client(one, key) as hc:
            opened = await hc.post(MCP, json=initialize(True), headers=INIT_HEADERS)
        session = opened.headers["mcp-session-id"]
        headers = {**INIT_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        token = two.state.mcp.relay.token
        answer = {"jsonrpc": "2.0", "id": f"{token}-1", "result": {"action": "decline"}}
        async with http_client(two, other) as hc:
            stolen = await hc.post(MCP, json=listing, headers=headers)
            forged = await hc.post(MCP, json=answer, headers=headers)
        async with http_client(two, key) as hc:
            own = await hc.post(MCP, json=listing, headers=headers)
            ended = await hc.delete(MCP, headers=headers)
        async with http_client(one, key) as hc:  # ended on every process, the opening one within a poll
            with anyio.fail_after(5):
                while (after := await hc.post(MCP, json=listing, headers=headers)).status_code != 404:
                    await anyio.sleep(0.05)
    assert opened.status_code == 200
    assert stolen.status_code == 404 and forged.status_code == 404
    assert own.status_code == 200 and "order_composite" in own.text
    assert ended.status_code == 200 and after.status_code == 404


async def test_the_relay_delivers_each_message_once_to_the_others_a_late_commit_too(
    platform: Platform,
) -> None:
    writer, reader = Relay(platform, 600), Relay(platform, 600)
    got: list[mcp_state.RelayMessage] = []

    async def keep(message: mcp_state.RelayMessage) -> None:
        got.append(message)

    reader.handlers["event"] = writer.handlers["event"] = keep
    start = (await reader.call(mcp_state.READ, mcp_state.RelayRead(after_id=-1))).last_id
    cursor = start
    late = None
    if not platform.db.is_sqlite:  # an insert that took its id first and commits last
        late = platform.db.unit_of_work(write=True)
        uow = await late.__aenter__()
        await repo.relay(uow.session, "event", "7", writer.token, {"n": "late"}, utcnow())
    await writer.send("event", "7", {"n": 1})
    await writer.send("event", "", {"n": 2})
    mine = await reader.call(mcp_state.READ, mcp_state.RelayRead(after_id=-1))
    cursor = await reader.poll(cursor)
    cursor = await reader.poll(cursor)  # nothing twice
    if late is not None:
        await uow.commit()
        await late.__aexit__(None, None, None)
        cursor = await reader.poll(cursor)
    before_own = len(got)
    await reader.send("event", "", {"n": "own"})
    await reader.poll(cursor)  # its own message is not handed back
    assert [m.body["n"] for m in got[:2]] == [1, 2]
    assert [m.body["n"] for m in got] == [1, 2, *(["late"] if late is not None else [])]
    assert len(got) == before_own and mine.last_id > start
    assert all(m.origin == writer.token for m in got)
