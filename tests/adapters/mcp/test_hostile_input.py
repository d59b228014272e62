"""Issue 30.5 on the MCP door: a 100,000-deep message or a 5,000-digit number is a JSON-RPC parse error
(400) before the SDK parses it; a subject with a right-to-left override is refused naming the field."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import MCP_HEADERS, text
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "9" * 5_000


async def test_mcp_answers_a_parse_error(app: FastAPI, rest: httpx.AsyncClient, account: Account) -> None:
    h = {**bearer(await account.key()), **MCP_HEADERS, "mcp-protocol-version": "2025-06-18"}
    call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
    call += '{"name": "list_tickets", "arguments": {"limit": VALUE}}}'
    for value, kind in ((DEEP, "json_too_deep"), (HUGE, "number_too_long")):
        r = await rest.post("/api/v1/mcp/", content=call.replace("VALUE", value), headers=h)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == -32700 and error["data"] == {"type": kind}, error


async def test_mcp_refuses_them_naming_the_field(app: FastAPI, account: Account) -> None:
    async with mcp_client(app, await account.key()) as client:
        result = await client.call_tool("open_ticket", {"subject": "a\u202eb", "message": "hello"})
    assert result.is_error
    assert text(result).startswith("validation_error: open_ticket: subject: ")
    assert "U+202E" in text(result)
