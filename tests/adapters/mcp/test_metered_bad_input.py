"""Issue 32's bad input on the MCP door (the REST door's are in tests/adapters/rest/test_quotas.py,
test_client_ip_limit.py and test_metered_bad_input.py): zero or negative GB, a speed limit of 0,
max_client_ips above its cap, and a sub-user's own limits out of range are refused as validation errors
naming the field, and nothing changes."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from proxyplane.domains.connections.client_ips import MAX_CLIENT_IPS
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.domains.quotas.support import MIB, metered_service, quota_row
from tests.support import Account

pytestmark = pytest.mark.anyio


async def test_metered_tools_refuse_bad_input_naming_the_field(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, 4 * MIB)
    sid = str(svc.service_id)
    await account.credit(10_000)
    async with mcp_client(app, await account.key()) as client:
        made = await client.call_tool("create_subuser", {"service_id": sid})
        assert not made.is_error, text(made)
        assert made.structured_content is not None
        sub = made.structured_content["subuser_id"]
        bad = [
            ("add_traffic", {"gb": 0, "max_total_cents": 1000, "idempotency_key": "zero"}, "gb"),
            ("add_traffic", {"gb": -2, "max_total_cents": 1000, "idempotency_key": "minus"}, "gb"),
            ("set_speed_limit", {"bytes_per_second": 0}, "bytes_per_second"),
            ("set_client_ip_limit", {"max_client_ips": MAX_CLIENT_IPS + 1}, "max_client_ips"),
            ("set_client_ip_limit", {"max_client_ips": 0}, "max_client_ips"),
            ("update_subuser", {"subuser_id": sub, "speed_limit_bps": 0}, "speed_limit_bps"),
            ("update_subuser", {"subuser_id": sub, "max_client_ips": MAX_CLIENT_IPS + 1}, "max_client_ips"),
            ("create_subuser", {"max_client_ips": 0}, "max_client_ips"),
        ]
        for tool, arguments, field in bad:
            result = await client.call_tool(tool, {"service_id": sid, **arguments})
            assert result.is_error, (tool, arguments)
            said = text(result)
            assert said.startswith(f"validation_error: {tool}: {field}: "), (tool, said)
        speed = await client.call_tool("get_speed_limit", {"service_id": sid})
        ips = await client.call_tool("get_client_ip_limit", {"service_id": sid})
        listed = await client.call_tool("list_subusers", {"service_id": sid})
    assert speed.structured_content is not None and speed.structured_content["bytes_per_second"] is None
    assert ips.structured_content is not None and ips.structured_content["max_client_ips"] is None
    assert listed.structured_content is not None
    (only,) = listed.structured_content["items"]
    assert (only["speed_limit_bps"], only["max_client_ips"]) == (None, None)
    row = await quota_row(platform, svc.service_id)
    assert row.extra_bytes == 0  # no traffic bought
