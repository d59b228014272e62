"""The operator's orders and services list (issue 33): each filter (customer by id, email or login;
status; kind; country; ordered between; expiring soon; unpaid) on real orders, on the CLI's invoke, the
operator API and the console page; never the proxy password."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import sign_in
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.operators.helpers import make_operator, run
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio


async def orders(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> tuple[dict, dict, Account]:
    """A paid order of `account` (8 IPs in IS) and a partly paid one of a second customer (30 IPs)."""
    await fresh_stock(platform, "proxy_datacenter", "IS", 40)
    key = await account.key()
    await account.credit(100_000)
    paid = await client.post(ORDER, json=body(count=8), headers=bearer(key))
    assert paid.status_code == 201, paid.text
    other = await make_account(platform)
    await other.credit(100)
    unpaid = await client.post(ORDER, json=body(count=30), headers=bearer(await other.key()))
    assert unpaid.status_code == 201 and unpaid.json()["amount_due_cents"] > 0, unpaid.text
    return paid.json()["service"], unpaid.json()["service"], other


def numbers(found: dict) -> list[int]:
    return [s["number"] for s in found["items"]]


async def test_each_filter(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    paid, unpaid, other = await orders(client, platform, account)
    mine = (await run(platform, "operator_service_list", customer=str(account.customer_id)))["items"]
    assert len(mine) == 1 and mine[0]["service_id"] == paid["service_id"]
    row = mine[0]
    n = row["number"]
    assert row["status"] == "active" and row["ip_count"] == 8 and row["countries"] == ["IS"]
    assert row["customer_email"] == account.email and row["amount_due_cents"] == 0
    assert "password" not in str(row).lower()
    by = {"customer": account.email}
    assert numbers(await run(platform, "operator_service_list", customer=account.email.upper())) == [n]
    assert numbers(await run(platform, "operator_service_list", customer=row["login"])) == [n]
    assert numbers(await run(platform, "operator_service_list", status="active", **by)) == [n]
    assert numbers(await run(platform, "operator_service_list", status="pending", **by)) == []
    assert numbers(await run(platform, "operator_service_list", kind="proxy_datacenter", **by)) == [n]
    assert numbers(await run(platform, "operator_service_list", kind="proxy_isp", **by)) == []
    assert numbers(await run(platform, "operator_service_list", country="is", **by)) == [n]
    assert numbers(await run(platform, "operator_service_list", country="DE", **by)) == []
    today = utcnow().date()
    assert numbers(await run(platform, "operator_service_list", created_until=today, **by)) == [n]
    assert numbers(await run(platform, "operator_service_list", created_since=today, **by)) == [n]
    tomorrow = today + timedelta(days=1)
    assert numbers(await run(platform, "operator_service_list", created_since=tomorrow, **by)) == []
    yesterday = today - timedelta(days=1)
    assert numbers(await run(platform, "operator_service_list", created_until=yesterday, **by)) == []
    # a one-month term: expiring within 40 days, not within 5
    assert numbers(await run(platform, "operator_service_list", expiring_within_days=40, **by)) == [n]
    assert numbers(await run(platform, "operator_service_list", expiring_within_days=5, **by)) == []
    assert numbers(await run(platform, "operator_service_list", unpaid=True, **by)) == []
    owed = await run(platform, "operator_service_list", unpaid=True, customer=other.email)
    assert [s["service_id"] for s in owed["items"]] == [unpaid["service_id"]]
    assert owed["items"][0]["status"] == "pending" and owed["items"][0]["amount_due_cents"] > 0
    # every unpaid order, across customers, is pending with an amount due
    everyone = await run(platform, "operator_service_list", unpaid=True, limit=500)
    assert unpaid["service_id"] in {s["service_id"] for s in everyone["items"]}
    assert all(s["status"] == "pending" and s["amount_due_cents"] > 0 for s in everyone["items"])


async def test_paging_counts_the_whole_match(platform: Platform) -> None:
    first = await run(platform, "operator_service_list", limit=1)
    if first["total"] < 2:
        pytest.skip("fewer than two services in this store")
    second = await run(platform, "operator_service_list", limit=1, offset=1)
    assert first["total"] == second["total"] and numbers(first)[0] > numbers(second)[0]


async def test_operator_api_and_console(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    paid, unpaid, other = await orders(client, platform, account)
    _, _, key = await make_operator(platform, "support")  # customers.read
    got = await client.get(
        "/api/admin/v1/service_list", params={"customer": other.email, "unpaid": "true"}, headers=bearer(key)
    )
    assert got.status_code == 200, got.text
    assert [s["service_id"] for s in got.json()["items"]] == [unpaid["service_id"]]
    bad = await client.get("/api/admin/v1/service_list", params={"status": "nope"}, headers=bearer(key))
    assert bad.status_code == 422
    await sign_in(client, platform, "viewer")
    page = await client.get("/admin/services", params={"customer": other.email, "unpaid": "true"})
    assert page.status_code == 200 and f"/admin/customers/{other.customer_id}" in page.text
    assert 'id="service-total">1 found' in page.text and "due $" in page.text
    none = await client.get("/admin/services", params={"customer": account.email, "unpaid": "true"})
    assert "Nothing matches these filters." in none.text
    customer = await client.get(f"/admin/customers/{account.customer_id}")
    assert f'href="/admin/services?customer={account.customer_id}"' in customer.text
