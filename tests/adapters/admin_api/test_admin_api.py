"""The operator API at /api/admin/v1 through the real app (issue 33): its own OpenAPI 3.1 document built
from the registry (every operation of the admin_api door), Bearer operator keys bound to a role, 403
naming the missing permission, a credit acting once per Idempotency-Key with its audit row, overview
figures equal to the ledger's sums, no customer secret in any answer or in the audit log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.operators.roles import ROLES, allowed, needed
from proxyplane.operations import REGISTRY
from proxyplane.ops import served
from proxyplane.platform import Platform
from proxyplane.storage.models import LedgerEntry, Service
from tests.domains.operators.helpers import make_operator
from tests.domains.stock.support import fresh_stock
from tests.gateway.test_store_static import buy
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/admin/v1"


async def test_openapi_is_its_own_3_1_document_with_every_operation_of_the_door(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get(f"{API}/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    ids = {route["operationId"] for path in doc["paths"].values() for route in path.values()}
    assert ids == set(served("admin_api", REGISTRY))
    assert "operator_stock_import" not in ids and "operator_create_key" not in ids  # host-only
    customer = (await client.get("/api/v1/openapi.json")).json()
    customer_ids = {r.get("operationId") for p in customer["paths"].values() for r in p.values()}
    assert not ids & customer_ids


async def test_every_operation_refuses_a_role_without_its_permission(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    keys = {role: (await make_operator(platform, role))[2] for role in ROLES}
    assert (await client.get(f"{API}/overview")).status_code == 401
    for name, op in served("admin_api", REGISTRY).items():
        for role, key in keys.items():
            permission = needed(role, op.permission, op.reseller)
            if allowed(role, permission):
                continue
            call = client.get if op.method == "GET" else client.post
            kwargs = {} if op.method == "GET" else {"json": {}}
            response = await call(f"{API}{op.path}", headers=bearer(key), **kwargs)  # type: ignore[operator]
            # the role is checked before the input: an empty input is refused for the role, not as invalid
            assert response.status_code == 403, (name, role, response.text)
            assert response.json()["detail"]["missing_permission"] == permission


async def test_credit_once_per_key_audited_and_no_secret_anywhere(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    email, _, key = await make_operator(platform, "finance")
    secret = await account.key()
    headers = {**bearer(key), "Idempotency-Key": "credit-1"}
    body = {"email": account.email, "cents": 1234, "reason": "goodwill"}
    first = await client.post(f"{API}/wallet_credit", json=body, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["balance_cents"] == 1234
    again = await client.post(f"{API}/wallet_credit", json=body, headers=headers)
    assert again.status_code == 409 and again.json()["detail"]["error"] == "already_applied"
    # a finance key may not suspend, and says why
    view = (
        await client.get(f"{API}/customer_view", params={"customer_id": account.customer_id}, headers=headers)
    ).json()
    assert view["balance_cents"] == 1234 and view["api_keys"]
    found = (
        await client.get(f"{API}/customer_search", params={"query": account.email}, headers=headers)
    ).json()
    assert [c["customer_id"] for c in found["customers"]] == [account.customer_id]
    audit = await client.get(f"{API}/audit_list", params={"actor": email}, headers=headers)
    entries = audit.json()["entries"]
    assert [e["action"] for e in entries] == ["operator_wallet_credit"]
    entry = entries[0]
    assert entry["before"] == {"balance_cents": 0} and entry["after"]["balance_cents"] == 1234
    assert entry["role"] == "finance" and entry["door"] == "admin_api" and entry["client_ip"] == "127.0.0.9"
    assert entry["target"] == f"customer:{account.customer_id}"
    for text in (view, audit.text):
        assert secret not in str(text) and account.password not in str(text)


async def test_overview_equals_the_ledgers_sums(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_personal", "US", 1)
    bought = await buy(client, platform, account, "Dedicated IP", parameters={})  # a sale today
    _, _, key = await make_operator(platform, "viewer")
    data = (await client.get(f"{API}/overview", headers=bearer(key))).json()
    assert (
        data["revenue_today_cents"] > 0
        and sum(data["active_services"].values()) >= 1
        and bought["status"] == "active"
    )
    now = datetime.fromisoformat(data["as_of"])
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    month, first = today.replace(day=1), today - timedelta(days=29)
    async with platform.db.unit_of_work(write=False) as uow:
        rows = (
            await uow.session.execute(
                select(LedgerEntry.created_at, LedgerEntry.amount_cents, LedgerEntry.kind)
            )
        ).all()
    sales = [
        (at.astimezone(UTC), -cents) for at, cents, kind in rows if kind not in ("deposit", "adjustment")
    ]
    assert data["revenue_today_cents"] == sum(c for at, c in sales if today <= at <= now)
    assert data["revenue_month_cents"] == sum(c for at, c in sales if month <= at <= now)
    assert data["revenue_30_days_cents"] == sum(c for at, c in sales if first <= at <= now)
    assert sum(d["cents"] for d in data["revenue_by_day"]) == data["revenue_30_days_cents"]
    assert len(data["revenue_by_day"]) == 30
    async with platform.db.unit_of_work(write=False) as uow:
        terms = (
            await uow.session.execute(
                select(Service.period_price_cents, Service.period_months).where(Service.status == "active")
            )
        ).all()
    assert data["mrr_cents"] == sum(price // months for price, months in terms)
