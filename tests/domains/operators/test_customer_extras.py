"""The customer page's invoices, sign-ins and 30-day traffic, and search by a client address (issue 33):
a sign-in's address or a whitelisted one finds the customer; the page's figures are the stored rows'."""

from __future__ import annotations

import random
import uuid

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.domains.accounts.logins import record_login
from proxyplane.platform import Platform
from proxyplane.storage.models.usage_rollups import UsageRollup
from tests.adapters.admin.test_console import sign_in
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.operators.helpers import run
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


def loopback() -> str:
    return f"127.{random.randint(100, 250)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


async def test_page_extras_and_search_by_client_ip(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(10_000)
    ordered = await client.post(ORDER, json=body(count=8), headers=bearer(key))
    assert ordered.status_code == 201, ordered.text
    out = ordered.json()
    sid = out["service"]["service_id"]
    signed_from, whitelisted = loopback(), loopback()
    async with platform.db.unit_of_work() as uow:
        await record_login(uow.session, account.customer_id, "web", signed_from, "test-agent", True)
        uow.session.add(
            UsageRollup(
                service_id=uuid.UUID(sid),
                span="d",
                bucket=utcnow().replace(hour=0, minute=0, second=0, microsecond=0),
                host="example.com",
                requests=7,
                connections=3,
                bytes_up=1000,
                bytes_down=24_000,
                errors=0,
            )
        )
        await uow.commit()
    added = await client.post(
        f"/api/v1/customer/services/{sid}/proxy/whitelist", json={"ip": whitelisted}, headers=bearer(key)
    )
    assert added.status_code in (200, 201), added.text

    for address in (signed_from, whitelisted):
        found = await run(platform, "operator_customer_search", query=address)
        assert [c["customer_id"] for c in found["customers"]] == [account.customer_id], address
    page = await run(platform, "operator_customer_view", customer_id=account.customer_id)
    (invoice,) = page["invoices"]
    assert invoice["total_cents"] == out["total_cents"] and invoice["kind"] == "order"
    (login,) = page["sign_ins"]
    assert login == {
        "channel": "web",
        "client_ip": signed_from,
        "user_agent": "test-agent",
        "success": True,
        "created_at": login["created_at"],
    }
    assert page["usage"] == [
        {"service_id": sid, "number": out["service"]["service_number"], "bytes": 25_000, "requests": 7}
    ]
    await sign_in(client, platform, "support")
    shown = await client.get(f"/admin/customers/{account.customer_id}")
    assert shown.status_code == 200 and signed_from in shown.text and "25,000 bytes" in shown.text
    assert f"<td>{invoice['invoice_id']}</td>" in shown.text
    searched = await client.get("/admin/customers", params={"q": whitelisted})
    assert f"/admin/customers/{account.customer_id}" in searched.text
