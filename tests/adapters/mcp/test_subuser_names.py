"""Sub-user names and revealed passwords (issue 30.9, 30.11) through REST and MCP: a name set at creation,
changed and cleared with PATCH / update_subuser, shown by get and list; list_subusers / get_subuser with
reveal=true give the real password (the one a proxy URL needs), masked otherwise."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI
from mcp_types import TextContent

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


def payload(result: object) -> dict:
    content = getattr(result, "content", [])
    return json.loads("".join(c.text for c in content if isinstance(c, TextContent)))


async def test_names_over_rest_and_mcp_and_reveal(
    app: FastAPI, rest: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await make_service(platform, account, parameters={"plan": "bandwidth"})
    key = await account.key()
    base, h = f"{API}/{svc.service_id}/subusers", bearer(key)

    body = {"name": "  Scraper fleet · EU ", "traffic_limit_bytes": 10**9}
    made = await rest.post(base, json=body, headers=h)
    assert made.status_code == 201, made.text
    sub = made.json()
    assert sub["name"] == "Scraper fleet · EU"  # trimmed
    one = f"{base}/{sub['subuser_id']}"
    assert (await rest.post(base, json={"name": "x" * 65}, headers=h)).status_code == 422

    masked = (await rest.get(base, headers=h)).json()["items"][0]
    assert masked["password"] != sub["password"] and not masked["password_revealed"]
    shown = (await rest.get(base, params={"reveal": "true"}, headers=h)).json()["items"][0]
    assert (shown["password"], shown["password_revealed"]) == (sub["password"], True)
    assert shown["name"] == sub["name"]
    got = (await rest.get(one, params={"reveal": "true"}, headers=h)).json()
    assert got["password"] == sub["password"]

    renamed = await rest.patch(one, json={"name": "nightly job"}, headers=h)
    assert renamed.status_code == 200 and renamed.json()["name"] == "nightly job"
    untouched = await rest.patch(one, json={"enabled": False}, headers=h)
    assert untouched.json()["name"] == "nightly job"  # a PATCH without the name keeps it...
    assert untouched.json()["traffic_limit_bytes"] == 10**9  # ...and the limits it does not send

    async with mcp_client(app, key) as client:
        result = await client.call_tool(
            "update_subuser",
            {"service_id": str(svc.service_id), "subuser_id": sub["subuser_id"], "name": "via MCP"},
        )
        assert payload(result)["name"] == "via MCP"
        listed = await client.call_tool("list_subusers", {"service_id": str(svc.service_id), "reveal": True})
        item = payload(listed)["items"][0]
        assert (item["name"], item["password"]) == ("via MCP", sub["password"])
        created = await client.call_tool(
            "create_subuser", {"service_id": str(svc.service_id), "name": "made by an agent"}
        )
        assert payload(created)["name"] == "made by an agent"

    cleared = await rest.patch(one, json={"name": ""}, headers=h)
    assert cleared.json()["name"] is None
    assert (await rest.patch(one, json={"name": "back"}, headers=h)).json()["name"] == "back"
    assert (await rest.patch(one, json={"name": None}, headers=h)).json()["name"] is None
