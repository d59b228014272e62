"""Spending the person confirms in the 2025-11-25 era (issue 21.3): a client that declares elicitation at
`initialize` gets a session (Mcp-Session-Id) and the same form-mode question as in 2026-07-28 (exact
amount; decline charges nothing; accept charges once; a replay asks nothing); the top-up's checkout goes
through URL mode; a client without elicitation stays stateless; a session is bound to its key.

The session's question travels on the tool call's SSE stream while the call waits, so these clients talk
to a real loopback server (the in-process ASGI transport returns a response only once it is complete)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import http_client
from tests.adapters.mcp.test_confirm_spending import Person, confirming_key, order
from tests.adapters.mcp.test_loopback import serve
from tests.adapters.mcp.test_orders import MIX, balance
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
LEGACY = "legacy"
MCP_PATH = "/api/v1/mcp"
INIT_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@contextlib.asynccontextmanager
async def asking_client(base: str, key: str, person: Person) -> AsyncIterator[Client]:
    """The official client in the 2025-11-25 era, declaring elicitation (it has a callback)."""
    async with httpx2.AsyncClient(headers=bearer(key), timeout=30) as hc:
        transport = streamable_http_client(base + MCP_PATH, http_client=hc)
        async with Client(transport, mode=LEGACY, elicitation_callback=person) as client:
            yield client


def initialize(elicitation: bool) -> dict[str, object]:
    capabilities: dict[str, object] = {"elicitation": {"form": {}}} if elicitation else {}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }


async def test_declined_charges_nothing_accepted_charges_once_replay_asks_nothing_checkout_by_url(
    platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    await account.credit(100_000)
    key = await confirming_key(account)  # requires confirmation: refused without a session (other test)
    body = order()
    no, yes, unticked = Person("decline"), Person("accept"), Person("accept", confirm=False)
    checkout = Person("accept")
    top_up = {"amount_cents": 2500, "payment_method": "card", "idempotency_key": uuid.uuid4().hex}
    async with serve(platform) as base:
        async with asking_client(base, key, no) as client:
            assert client.protocol_version == "2025-11-25"
            quote = await client.call_tool("quote_composite", MIX)
            declined = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
            balance_after_decline = await balance(account)
        async with asking_client(base, key, yes) as client:
            ok = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
            again = await client.call_tool("order_composite", {**body, "max_total_cents": 100_000})
        async with asking_client(base, key, unticked) as client:
            refused = await client.call_tool("order_composite", {**order(), "max_total_cents": 100_000})
        async with asking_client(base, key, checkout) as client:
            deposit = await client.call_tool("init_deposit", top_up)
    assert balance_after_decline == 100_000
    assert quote.structured_content is not None
    total = quote.structured_content["total_cents"]
    assert declined.is_error and text(declined).startswith("confirmation_declined: ")
    (asked,) = no.asked
    assert isinstance(asked, ElicitRequestFormParams)
    assert f"${total // 100:,}.{total % 100:02d}" in asked.message and f"({total} cents)" in asked.message
    assert "order composite" in asked.message and '"IS"' in asked.message
    assert ok.is_error is False, text(ok)
    assert again.structured_content == ok.structured_content
    assert len(yes.asked) == 1  # the retry replays: nothing to confirm, nothing charged again
    assert refused.is_error and text(refused).startswith("confirmation_declined: ")
    assert await balance(account) == 100_000 - total
    assert deposit.is_error is False, text(deposit)
    assert deposit.structured_content is not None and deposit.structured_content["checkout"] == "accept"
    (link,) = checkout.asked  # payment details never in a form: the checkout page by URL mode
    assert isinstance(link, ElicitRequestURLParams)
    assert link.url == deposit.structured_content["checkout_url"] and "$25.00" in link.message


async def test_only_asking_clients_get_a_session_bound_to_their_key_body_limit_kept(
    app: FastAPI, account: Account
) -> None:
    key, other = await account.key(), await account.key()
    async with http_client(app, key) as hc:
        plain = await hc.post(MCP_PATH, json=initialize(False), headers=INIT_HEADERS)
        asking = await hc.post(MCP_PATH, json=initialize(True), headers=INIT_HEADERS)
    session = asking.headers.get("mcp-session-id")
    assert plain.status_code == 200 and "mcp-session-id" not in plain.headers
    assert asking.status_code == 200 and session
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {**INIT_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    async with http_client(app, other) as hc:
        stolen = await hc.post(MCP_PATH, json=listing, headers=headers)
    async with http_client(app, key) as hc:
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await hc.post(MCP_PATH, json=done, headers=headers)).status_code == 202
        own = await hc.post(MCP_PATH, json=listing, headers=headers)
        ended = await hc.delete(MCP_PATH, headers=headers)
    assert stolen.status_code == 404  # another key: as if the session did not exist
    assert own.status_code == 200 and "order_composite" in own.text
    assert ended.status_code == 200
    async with http_client(app, key) as hc:  # the router reads the body first: the limit still holds
        huge = {**initialize(True), "padding": "x" * (5 * 1024 * 1024)}
        too_large = await hc.post(MCP_PATH, content=json.dumps(huge), headers=INIT_HEADERS)
    assert too_large.status_code == 413
