"""The API's metrics, health and request ids through the real app: /metrics after real requests (counted
by route template and status, exactly), /livez, /readyz (and readiness false with migrations pending or
no schema at all), X-Request-Id returned (the caller's when sane, else a new one)."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory
from prometheus_client import REGISTRY, generate_latest

from proxyplane.observability import health
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.migrate import alembic_config, upgrade
from tests.support import Account, bearer

from .support import delta, parse

pytestmark = pytest.mark.anyio
BALANCE = "/api/v1/customer/wallet/balance"


async def test_metrics_count_requests_by_route_and_status(
    client: httpx.AsyncClient, account: Account
) -> None:
    key = await account.key()
    before = parse((await client.get("/metrics")).text)
    for _ in range(3):
        assert (await client.get(BALANCE, headers=bearer(key))).status_code == 200
    assert (await client.get(BALANCE, headers=bearer("ppk_not_a_real_key_123456"))).status_code == 401
    assert (await client.get("/no/such/path/123")).status_code == 404
    missing = f"/api/v1/customer/services/{uuid.uuid4()}"
    assert (await client.get(missing, headers=bearer(key))).status_code == 404
    after = parse((await client.get("/metrics")).text)

    def moved(**labels: str) -> float:
        return delta(after, before, "proxyplane_http_requests_total", **labels)

    assert moved(method="GET", route=BALANCE, status="200") == 3
    assert moved(method="GET", route=BALANCE, status="401") == 1
    assert moved(method="GET", route="unmatched", status="404") == 1
    assert delta(after, before, "proxyplane_http_request_seconds_count", method="GET", route=BALANCE) == 4

    def ops(operation: str, outcome: str) -> float:
        labels = {"operation": operation, "channel": "rest", "outcome": outcome}
        return delta(after, before, "proxyplane_operations_total", **labels)

    assert ops("get_balance", "ok") == 3  # the forged key is refused before the operation runs
    assert ops("get_service", "not_found") == 1
    assert (
        delta(after, before, "proxyplane_operation_seconds_count", operation="get_balance", channel="rest")
        == 3
    )
    assert not any("no/such" in str(labels) for _, labels in after)  # raw paths never become labels


async def test_health_and_request_ids(client: httpx.AsyncClient) -> None:
    live = await client.get("/livez")
    assert live.status_code == 200 and live.text == "ok\n"
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
    given = await client.get("/livez", headers={"X-Request-Id": "lb-abc-12345678"})
    assert given.headers["x-request-id"] == "lb-abc-12345678"
    bad = await client.get("/livez", headers={"X-Request-Id": "not sane\x7f"})
    new = bad.headers["x-request-id"]
    assert new != "not sane\x7f" and len(new) == 32
    assert (await client.get("/livez")).headers["x-request-id"] != new  # one per request


async def test_readiness_false_without_schema_or_with_a_migration_pending(tmp_path: Path) -> None:
    empty = Database(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    try:
        reason = await health.not_ready(empty)
        assert reason is not None and "not migrated" in reason
    finally:
        await empty.dispose()
    url = f"sqlite+aiosqlite:///{tmp_path / 'behind.db'}"
    script = ScriptDirectory.from_config(alembic_config(url))
    [head] = script.get_heads()
    parent = script.get_revision(head).down_revision
    assert isinstance(parent, str)
    await upgrade(url, parent)
    behind = Database(url)
    try:
        reason = await health.not_ready(behind)
        assert reason is not None and "migrations pending" in reason
        await upgrade(url)
        assert await health.not_ready(behind) is None
    finally:
        await behind.dispose()


async def test_mcp_tool_calls_counted(platform: Platform, account: Account) -> None:
    from proxyplane.app import create_app
    from tests.adapters.mcp.conftest import mcp_client

    key = await account.key()
    app = create_app(platform)
    before = parse(generate_latest(REGISTRY).decode())
    async with app.router.lifespan_context(app), mcp_client(app, key) as client:
        for _ in range(2):
            result = await client.call_tool("get_balance", {})
            assert not result.is_error
        missing = await client.call_tool("get_service", {"service_id": str(uuid.uuid4())})
        assert missing.is_error
    after = parse(generate_latest(REGISTRY).decode())
    assert delta(after, before, "proxyplane_mcp_tool_calls_total", tool="get_balance", outcome="ok") == 2
    assert (
        delta(after, before, "proxyplane_mcp_tool_calls_total", tool="get_service", outcome="not_found") == 1
    )
    assert (
        delta(
            after, before, "proxyplane_operations_total", operation="get_balance", channel="mcp", outcome="ok"
        )
        == 2
    )


async def test_plain_starlette_routes_are_labelled_by_path(client: httpx.AsyncClient) -> None:
    before = parse((await client.get("/metrics")).text)
    assert (await client.get("/api/v1/openapi.json")).status_code == 200
    after = parse((await client.get("/metrics")).text)
    labels = {"method": "GET", "route": "/api/v1/openapi.json", "status": "200"}
    assert delta(after, before, "proxyplane_http_requests_total", **labels) == 1
