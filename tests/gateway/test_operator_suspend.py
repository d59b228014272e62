"""The operator suspends a customer's service through the operator API (issue 33): the gateway refuses
it at once; resume serves it again; a refund cancels it and credits the unused time. The customer is
found by its exit IP. Every step is in the audit log with before -> after."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.operators.helpers import make_operator
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

from .clients import basic
from .test_store_static import Counted, buy, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio
ADMIN = "/api/admin/v1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_suspend_refuses_at_once_resume_serves_refund_credits(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    exits = await fresh_stock(platform, "proxy_personal", "US", 1)
    svc = await buy(client, platform, account, "Dedicated IP", parameters={})
    key, sid = svc["key"], svc["service_id"]
    auth = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/auth?reveal=true", headers=bearer(key))
    ).json()
    _, _, op_key = await make_operator(platform, "admin")
    ops = bearer(op_key)
    found = (await client.get(f"{ADMIN}/customer_search", params={"query": exits[0]}, headers=ops)).json()
    assert [c["customer_id"] for c in found["customers"]] == [account.customer_id]
    settings = node_settings(exits)
    proxy = (exits[0], settings.static_http_port)
    url = f"http://127.0.0.1:{origin.port}/hello"
    get = Counted().get
    credentials = basic(auth["login"], auth["password"])
    async with running_node(platform, settings, tmp_path) as node:
        platform.on("entitlements_changed", node.notify)
        assert (await get(proxy, url, credentials))[0] == 200
        done = await client.post(f"{ADMIN}/service_suspend", json={"service_id": sid}, headers=ops)
        assert done.status_code == 200 and done.json()["status"] == "suspended"

        async def refused() -> bool:
            return (await get(proxy, url, credentials))[0] in (403, 407)  # not served / unknown

        await eventually(refused, within=1.0)
        done = await client.post(f"{ADMIN}/service_resume", json={"service_id": sid}, headers=ops)
        assert done.json()["status"] == "active"

        async def served() -> bool:
            return (await get(proxy, url, credentials))[0] == 200

        await eventually(served, within=1.0)
        before = (
            await client.get(
                f"{ADMIN}/customer_view", params={"customer_id": account.customer_id}, headers=ops
            )
        ).json()
        refund = await client.post(
            f"{ADMIN}/service_refund", json={"service_id": sid, "reason": "test"}, headers=ops
        )
        assert refund.status_code == 200, refund.text
        body = refund.json()
        assert body["status"] == "cancelled" and body["refunded_cents"] > 0
        assert body["balance_cents"] == before["balance_cents"] + body["refunded_cents"]
        await eventually(refused, within=1.0)
    audit = (await client.get(f"{ADMIN}/audit_list", params={"target": sid}, headers=ops)).json()["entries"]
    assert [e["action"] for e in audit] == [
        "operator_service_refund",
        "operator_service_resume",
        "operator_service_suspend",
    ]
    assert audit[2]["before"] == {"status": "active"} and audit[2]["after"]["status"] == "suspended"
    assert auth["password"] not in str(audit)
