"""MCP calls with misnamed or missing arguments (issue 22.7): one short error naming the unknown and the
missing arguments (with the likely intended name) and the fields the tool expects, not a validation dump."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from proxyplane.core.text_input import LABEL_PATTERN, NUL_FREE_PATTERN
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


async def test_a_nul_character_is_a_validation_error_and_excluded_by_the_tool_schema(
    app: FastAPI, account: Account
) -> None:
    async with mcp_client(app, await account.key()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        refused = await client.call_tool("open_ticket", {"subject": "nul \x00 here", "message": "hello"})
        listed = await client.call_tool("list_tickets", {})
    schema = tools["open_ticket"].input_schema["properties"]
    assert schema["message"]["pattern"] == NUL_FREE_PATTERN and schema["subject"]["pattern"] == LABEL_PATTERN
    assert refused.is_error and text(refused).startswith("validation_error: open_ticket: subject: ")
    assert '"total": 0' in text(listed)  # nothing written
