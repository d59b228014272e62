"""Issue 34.5: the account's activity log names the holder's own calls on every door, not only a member's:
a dashboard sign-in, an API key made over REST, a legacy purchase with Basic credentials, and an order
placed with the account's own key. Secrets never reach the log."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.legacy.support import buy, static_product
from tests.adapters.web.helpers import login
from tests.domains.stock.support import fresh_stock
from tests.support import bearer, make_account

API = "/api/v1"
pytestmark = pytest.mark.anyio


async def test_the_holders_calls_on_every_door_are_in_the_log(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    await account.credit(100_000)
    key = await account.key()
    signed = await login(client, account.email, account.password)
    assert signed.status_code == 303, signed.text
    made = await client.post(
        f"{API}/customers/me/api-keys",
        json={"name": "ci", "scopes": ["services:read"]},
        headers={**bearer(key), "user-agent": "holder-test"},
    )
    assert made.status_code == 201, made.text
    pid, _ = await static_product(platform)
    await buy(client, account, pid)
    await fresh_stock(platform, "proxy_isp", "IS", 3)
    order = await client.post(
        f"{API}/billing/composite/order",
        json={
            "product_kind": "proxy_isp",
            "period_months": 1,
            "segments": [{"country": "IS", "count": 2}],
            "whitelist_ips": ["127.0.0.9"],
            "use_balance": True,
            "idempotency_key": uuid.uuid4().hex,
        },
        headers=bearer(key),
    )
    assert order.status_code == 201, order.text

    log = (await client.get(f"{API}/customer/me/activity", headers=bearer(key))).json()
    done = {(e["actor"], e["action"], e["channel"]) for e in log["items"]}
    assert (account.email, "signed_in", "web") in done
    assert (account.email, "create_api_key", "rest") in done
    assert (account.email, "order_composite", "rest") in done, done
    legacy = [e for e in log["items"] if e["channel"] == "legacy"]
    assert legacy and all(e["actor"] == account.email and e["member_id"] is None for e in legacy), done
    secret = made.json()["secret"]
    assert not [e for e in log["items"] if secret in e["detail"] or account.password in e["detail"]]
    # the log's own read is not an action
    assert not [e for e in log["items"] if e["action"] == "get_account_activity"]
