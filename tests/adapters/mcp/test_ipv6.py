"""An agent buys IPv6 over MCP (issue 16) with the official client: countries of proxy_ipv6 (free /64s),
quote, order from the balance, the subnet in get_proxy_ips, the subnets' countries in get_proxy_config,
and extra IPs on an IPv6 service = extra /64s of the same prefixes (quote_add_ips, add_ips)."""

from __future__ import annotations

import ipaddress
import uuid

import pytest
from fastapi import FastAPI

from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import mcp_client
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account

pytestmark = pytest.mark.anyio
COUNTRY = "LT"
MIX = {
    "product_kind": "proxy_ipv6",
    "period_months": 1,
    "segments": [{"country": COUNTRY, "count": 1}],
    "geo_source": "maxmind",
}


async def test_agent_orders_ipv6_and_adds_a_subnet(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    try:
        await _run_agent_orders_ipv6_and_adds_a_subnet(app, platform, account)
    finally:
        await retire_country(platform, COUNTRY)


async def _run_agent_orders_ipv6_and_adds_a_subnet(
    app: FastAPI, platform: Platform, account: Account
) -> None:
    prefix = ipaddress.IPv6Network(await fresh_prefix(platform, COUNTRY, length=61))  # 8 /64s
    await account.credit(100_000)
    order = {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": uuid.uuid4().hex}
    async with mcp_client(app, await account.key()) as client:
        countries = await client.call_tool("list_countries", {"product_kind": "proxy_ipv6"})
        assert countries.structured_content is not None, text(countries)
        listed = {c["code"]: c["available_ips"] for c in countries.structured_content["countries"]}
        assert listed[COUNTRY] == 8
        quote = await client.call_tool("quote_composite", MIX)
        assert quote.structured_content is not None, text(quote)
        total = quote.structured_content["total_cents"]
        ok = await client.call_tool("order_composite", {**order, "max_total_cents": total})
        assert ok.is_error is False and ok.structured_content is not None, text(ok)
        svc = ok.structured_content["service"]
        assert svc["product_kind"] == "proxy_ipv6" and ok.structured_content["total_cents"] == total
        ref = {"service_id": svc["service_id"]}
        ips = await client.call_tool("get_proxy_ips", ref)
        assert ips.structured_content is not None, text(ips)
        (first,) = [e["ip"] for e in ips.structured_content["endpoints"]]
        assert first == svc["ips"][0]["ip"] and ipaddress.IPv6Network(first).subnet_of(prefix)
        config = await client.call_tool("get_proxy_config", ref)
        assert config.structured_content is not None and config.structured_content["countries"] == ["lt"]

        more = {**ref, "segments": [{"country": COUNTRY, "count": 2}]}
        priced = await client.call_tool("quote_add_ips", more)
        assert priced.structured_content is not None, text(priced)
        assert priced.structured_content["added_ip_count"] == 2 and priced.structured_content["errors"] == []
        added = await client.call_tool(
            "add_ips",
            {
                **more,
                "idempotency_key": uuid.uuid4().hex,
                "max_total_cents": priced.structured_content["charge_cents"],
            },
        )
        assert added.is_error is False and added.structured_content is not None, text(added)
        new = [i["ip"] for i in added.structured_content["new_ips"]]
        assert added.structured_content["ip_count"] == 3 and len(set(new) | {first}) == 3
        assert all(
            ipaddress.IPv6Network(s).prefixlen == 64 and ipaddress.IPv6Network(s).subnet_of(prefix)
            for s in new
        )
        assert added.structured_content["charged_cents"] == priced.structured_content["charge_cents"]
        ips = await client.call_tool("get_proxy_ips", ref)
        assert ips.structured_content is not None
        assert sorted(e["ip"] for e in ips.structured_content["endpoints"]) == sorted([first, *new])
        too_many = await client.call_tool(
            "add_ips",
            {
                **ref,
                "segments": [{"country": COUNTRY, "count": 6}],
                "idempotency_key": "v6-more",
                "max_total_cents": 10**6,
            },
        )
        assert too_many.is_error is True and "subnet" in text(too_many), text(too_many)
