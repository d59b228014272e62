"""The MCP server on a real loopback port (uvicorn, the whole app with its lifespan) and the official
client over Streamable HTTP: a full agent journey — countries, quote, top-up through the test processor,
order with a price guard, credentials, whitelist, a rotating service and its sticky session, usage, the
invoice PDF as an embedded resource, recommendations, a ticket — and a capped key refused at its cap."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import EmbeddedResource

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import StickySession
from tests.adapters.legacy.support import rotating_product
from tests.adapters.mcp.test_tools import text
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
MIX = {
    "product_kind": "proxy_datacenter",
    "period_months": 1,
    "segments": [{"country": "IS", "count": 8}],
    "geo_source": "maxmind",
}


@contextlib.asynccontextmanager
async def serve(platform: Platform) -> AsyncIterator[str]:
    from proxyplane.app import create_app

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(platform), lifespan="on", log_level="warning", access_log=False, timeout_keep_alive=75
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@contextlib.asynccontextmanager
async def agent(base: str, key: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers=bearer(key), timeout=30) as hc:
        async with Client(streamable_http_client(f"{base}/api/v1/mcp", http_client=hc)) as client:
            yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert result.is_error is False, (tool, text(result))
    assert result.structured_content is not None
    return dict(result.structured_content)


async def pay_checkout(platform: Platform, base: str, deposit: dict[str, Any]) -> None:
    """The test processor's signed 'paid' callback, sent over the loopback port like the processor would."""
    body, headers = platform.processor().signed_callback(
        uuid.UUID(deposit["deposit_id"]), "paid", deposit["amount_cents"]
    )
    async with httpx.AsyncClient(base_url=base) as http:
        r = await http.post("/api/v1/payments/test/callback", content=body, headers=headers)
    assert r.status_code == 200, r.text


async def test_agent_journey_on_a_loopback_port(platform: Platform, account: Account) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    _, product = await rotating_product(platform)
    key = await account.key()
    async with serve(platform) as base, agent(base, key) as client:
        tools = await client.list_tools()
        assert len(tools.tools) >= 50
        countries = await call(client, "list_countries", {})
        assert "IS" in {c["code"] for c in countries["countries"]}
        total = (await call(client, "quote_composite", MIX))["total_cents"]
        short = await client.call_tool(
            "order_composite",
            {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": "o1", "max_total_cents": total},
        )
        assert short.is_error and f"missing_cents={total}" in text(short) and "init_deposit" in text(short)
        deposit = await call(
            client,
            "init_deposit",
            {"amount_cents": total + 1000, "payment_method": "card", "idempotency_key": "top-up-1"},
        )
        await pay_checkout(platform, base, deposit)
        assert (await call(client, "get_deposit", {"deposit_id": deposit["deposit_id"]}))["status"] == "paid"
        order = await call(
            client,
            "order_composite",
            {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": "o1", "max_total_cents": total},
        )
        assert order["amount_due_cents"] == 0 and order["wallet_paid_cents"] == total
        sid = order["service"]["service_id"]
        creds = await call(client, "get_proxy_auth", {"service_id": sid, "reveal": True})
        assert creds["login"] and "*" not in creds["password"]
        whoami = await call(client, "whoami", {})
        assert whoami["client_ip"] == "127.0.0.1" and whoami["channel"] == "mcp"
        listed = await call(client, "add_proxy_whitelist", {"service_id": sid, "ip": whoami["client_ip"]})
        assert "127.0.0.1" in str(listed)
        rotating = await call(
            client,
            "create_service",
            {"product_id": str(product.product_id), "idempotency_key": "rot-1", "max_total_cents": 400},
        )
        rid = rotating["service"]["service_id"]
        await gateway_session(platform, rid, "agent1", "127.0.0.250")
        rotated = await call(client, "rotate_sticky_session", {"service_id": rid, "sid": "agent1"})
        assert rotated["exit_ip"] != "127.0.0.250"
        ttl = await call(client, "set_sticky_ttl", {"service_id": rid, "ttl_minutes": 15})
        assert ttl["ttl_minutes"] == 15
        now = utcnow()
        window = {"service_id": sid, "start": (now - timedelta(days=1)).isoformat(), "end": now.isoformat()}
        usage = await call(client, "get_service_usage", window)
        assert usage["requests"] == 0  # no traffic through the gateway in this test
        invoices = await call(client, "list_invoices", {})
        invoice_id = invoices["items"][0]["invoice_id"]
        pdf = await client.call_tool("get_invoice_pdf", {"invoice_id": invoice_id})
        attached = [c for c in pdf.content if isinstance(c, EmbeddedResource)]
        assert len(attached) == 1 and attached[0].resource.mime_type == "application/pdf"
        assert base64.b64decode(getattr(attached[0].resource, "blob", "")).startswith(b"%PDF")
        assert "content_base64" not in text(pdf)
        recs = await call(client, "get_recommendations", {})
        assert recs["days"] == 7 and isinstance(recs["items"], list)
        ticket = await call(
            client, "open_ticket", {"subject": "agent", "message": "hello", "service_id": sid}
        )
        assert ticket["status"] == "open"
        # a key capped below the next purchase is refused at its cap; nothing is charged
        capped = await call(
            client,
            "create_api_key",
            {
                "name": "capped",
                "scopes": ["wallet:spend", "wallet:read"],
                "spend_limit_daily_cents": total - 1,
            },
        )
        before = (await call(client, "get_balance", {}))["balance_cents"]
    async with serve(platform) as base, agent(base, capped["secret"]) as capped_client:
        refused = await capped_client.call_tool(
            "order_composite",
            {**MIX, "whitelist_ips": ["127.0.0.9"], "idempotency_key": "o2", "max_total_cents": total},
        )
        after = (await call(capped_client, "get_balance", {}))["balance_cents"]
    assert refused.is_error and text(refused).startswith("spend_limit_exceeded: ")
    assert f"remaining_cents={total - 1}" in text(refused)
    assert after == before


async def gateway_session(platform: Platform, service_id: str, sid: str, ip: str) -> None:
    """A sticky session as a gateway node writes it when a client first uses `sid`."""
    now = utcnow().replace(microsecond=0)
    async with platform.db.unit_of_work() as uow:
        uow.session.add(
            StickySession(
                service_id=uuid.UUID(service_id),
                sid=sid,
                exit_ip=ip,
                started_at=now,
                expires_at=now + timedelta(minutes=10),
                ended=False,
                writer="node-test",
                updated_at=now,
            )
        )
        await uow.commit()
