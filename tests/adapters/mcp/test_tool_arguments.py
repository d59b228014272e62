"""MCP calls with misnamed or missing arguments (issue 22.7): one short error naming the unknown and the
missing arguments (with the likely intended name) and the fields the tool expects, not a validation dump."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.support import Account

pytestmark = pytest.mark.anyio


async def test_misnamed_arguments_get_a_short_message(app: FastAPI, account: Account) -> None:
    async with mcp_client(app, await account.key()) as client:
        misnamed = await client.call_tool("add_proxy_whitelist", {"service": "x", "address": "127.0.0.1"})
        out_of_range = await client.call_tool("get_ledger", {"limit": 500})
    assert misnamed.is_error and text(misnamed) == (
        "validation_error: add_proxy_whitelist: unknown argument(s): service (did you mean service_id?), "
        "address; missing required: service_id, ip. Expected arguments: service_id (required), "
        "ip (required). Nothing was done."
    )
    assert out_of_range.is_error
    assert text(out_of_range).startswith("validation_error: get_ledger: limit: ")
    assert "Expected arguments: offset, limit." in text(out_of_range)
    for result in (misnamed, out_of_range):
        assert "errors.pydantic.dev" not in text(result) and "input_value" not in text(result)
