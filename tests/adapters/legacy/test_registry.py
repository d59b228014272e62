"""The legacy door over the registry: every route runs one registered operation served by the legacy door
(and only by it, unless the operation is shared with v1 like get_balance); legacy-only operations never
appear in REST or MCP; what they may do is bounded by the scopes a legacy credential carries, and the
operations that charge the wallet are declared SPENDS_MONEY (the update_list case: test_billing.py)."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.adapters.legacy.auth import LEGACY_SCOPES
from proxyplane.adapters.legacy.routes import ROUTES
from proxyplane.operations import REGISTRY
from proxyplane.ops import Effect, served

pytestmark = pytest.mark.anyio


async def test_every_legacy_route_runs_a_registered_legacy_operation(client: httpx.AsyncClient) -> None:
    assert len(ROUTES) == 20  # the legacy document's 20 endpoints
    for (method, path), op in ROUTES.items():
        assert REGISTRY[op.name] is op, (method, path)
        assert op.serves("legacy"), (method, path)
        assert op.scopes <= LEGACY_SCOPES, op.name  # a legacy credential can run it
    legacy = served("legacy")
    # and no legacy operation without a route, but the credential check every route runs first
    assert set(legacy) == {op.name for op in ROUTES.values()} | {"legacy_sign_in"}


async def test_legacy_only_operations_are_not_served_by_rest_or_mcp(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/api/v1/openapi.json")).json()
    rest_ids = {
        o["operationId"] for item in spec["paths"].values() for o in item.values() if "operationId" in o
    }
    legacy_only = {name for name, op in served("legacy").items() if op.doors == {"legacy"}}
    assert legacy_only and not legacy_only & rest_ids
    assert not legacy_only & set(served("mcp"))
    assert set(served("rest")) <= rest_ids


def test_legacy_operations_that_charge_are_declared_spending() -> None:
    spending = {op.name for op in served("legacy").values() if op.effect == Effect.SPENDS_MONEY}
    assert spending == {"legacy_order_product", "legacy_put_service"}
