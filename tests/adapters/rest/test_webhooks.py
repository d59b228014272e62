"""Webhook endpoints over REST: events list, secret once, update/disable/rotate/delete, SSRF refusals,
deliveries, test event, scopes, another customer's endpoint, balance-low threshold."""

import httpx
import pytest
from standardwebhooks import Webhook

from proxyplane.core.settings import Settings
from proxyplane.domains.events.catalogue import EVENT_TYPES
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
BASE = "/api/v1/customer/webhooks"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"webhooks_allow_http_loopback": True})


async def test_event_types_listed_live(client: httpx.AsyncClient, account: Account) -> None:
    r = await client.get(f"{BASE}/events", headers=bearer(await account.key({"webhooks"})))
    assert r.status_code == 200
    types = [e["type"] for e in r.json()]
    assert types == list(EVENT_TYPES)
    for wanted in (
        "order.created",
        "service.ips_replaced",
        "wallet.balance_low",
        "ticket.replied",
        "webhook.test",
    ):
        assert wanted in types
    assert (
        await client.get(f"{BASE}/events", headers=bearer(await account.key({"wallet:read"})))
    ).status_code == 403


async def test_endpoint_lifecycle(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key({"webhooks"})
    body = {"url": "http://127.0.0.1:9/hook", "event_types": ["wallet.credited"], "description": "mine"}
    r = await client.post(BASE, json=body, headers=bearer(key))
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["secret"].startswith("whsec_") and created["enabled"] is True
    Webhook(created["secret"])  # a valid standardwebhooks secret
    ep = f"{BASE}/{created['endpoint_id']}"
    listed = (await client.get(BASE, headers=bearer(key))).json()
    assert [e["endpoint_id"] for e in listed] == [created["endpoint_id"]] and "secret" not in listed[0]
    assert "secret" not in (await client.get(ep, headers=bearer(key))).json()
    r = await client.patch(
        ep, json={"event_types": ["wallet.credited", "api_key.created"]}, headers=bearer(key)
    )
    assert r.json()["event_types"] == ["api_key.created", "wallet.credited"]
    r = await client.patch(ep, json={"event_types": ["no.such"]}, headers=bearer(key))
    assert r.status_code == 422 and "no.such" in r.json()["detail"]["message"]
    assert (await client.post(f"{ep}/disable", headers=bearer(key))).json()["enabled"] is False
    assert (await client.post(f"{ep}/test", headers=bearer(key))).status_code == 409
    assert (await client.post(f"{ep}/enable", headers=bearer(key))).json()["enabled"] is True
    rotated = (await client.post(f"{ep}/rotate-secret", headers=bearer(key))).json()
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    test = await client.post(f"{ep}/test", headers=bearer(key))
    assert test.status_code == 201 and test.json()["status"] == "pending" and test.json()["attempts"] == 0
    page = (await client.get(f"{ep}/deliveries", headers=bearer(key))).json()
    assert page["total"] == 1 and page["items"][0]["event_type"] == "webhook.test"
    one = await client.get(f"{ep}/deliveries/{test.json()['delivery_id']}", headers=bearer(key))
    assert one.json()["payload"]["id"] == test.json()["webhook_id"]
    assert (await client.delete(ep, headers=bearer(key))).status_code == 200
    assert (await client.get(ep, headers=bearer(key))).status_code == 404


async def test_only_subscribed_types_queue_deliveries(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    body = {"url": "http://127.0.0.1:9/hook", "event_types": ["api_key.revoked"]}
    ep = (await client.post(BASE, json=body, headers=bearer(key))).json()
    other = await client.post(
        "/api/v1/customers/me/api-keys", json={"name": "x", "scopes": ["webhooks"]}, headers=bearer(key)
    )
    await account.credit(50)  # wallet.credited: not subscribed
    await client.delete(f"/api/v1/customers/me/api-keys/{other.json()['key_id']}", headers=bearer(key))
    items = (await client.get(f"{BASE}/{ep['endpoint_id']}/deliveries", headers=bearer(key))).json()["items"]
    assert [d["event_type"] for d in items] == ["api_key.revoked"]
    assert items[0]["payload"]["data"]["key_id"] == other.json()["key_id"]


@pytest.mark.parametrize(
    "url",
    [
        "https://10.1.2.3/h",
        "https://169.254.169.254/",
        "http://93.184.216.34/",
        "ftp://127.0.0.1/",
        "https://[fd12::1]/",
        "https://192.168.0.10:8443/",
    ],
)
async def test_ssrf_targets_refused(client: httpx.AsyncClient, account: Account, url: str) -> None:
    r = await client.post(BASE, json={"url": url}, headers=bearer(await account.key({"webhooks"})))
    assert r.status_code == 422 and r.json()["detail"]["error"] == "validation_error"


async def test_loopback_refused_without_development_setting(
    client: httpx.AsyncClient, platform, account: Account
) -> None:
    platform.settings = platform.settings.model_copy(update={"webhooks_allow_http_loopback": False})
    key = await account.key({"webhooks"})
    for url in (
        "https://localhost/h",
        "https://127.0.0.1/h",
        "http://127.0.0.1:8000/h",
        "https://2130706433/",
    ):
        r = await client.post(BASE, json={"url": url}, headers=bearer(key))
        assert r.status_code == 422, url
        assert "https" in r.json()["detail"]["message"] or "loopback" in r.json()["detail"]["message"]


async def test_other_customers_endpoint_is_not_found(
    client: httpx.AsyncClient, platform, account: Account
) -> None:
    mine = (
        await client.post(BASE, json={"url": "http://127.0.0.1:9/"}, headers=bearer(await account.key()))
    ).json()
    stranger = await make_account(platform)
    skey = await stranger.key()
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/test"),
        ("GET", "/deliveries"),
    ):
        kwargs = {"json": {"description": "x"}} if method == "PATCH" else {}
        r = await client.request(
            method, f"{BASE}/{mine['endpoint_id']}{path}", headers=bearer(skey), **kwargs
        )
        assert r.status_code == 404, (method, path)


async def test_balance_low_threshold(client: httpx.AsyncClient, platform, account: Account) -> None:
    from proxyplane.domains.wallet import service as wallet

    key = await account.key()
    r = await client.patch(
        "/api/v1/customer/me/notifications", json={"balance_low_threshold_cents": 500}, headers=bearer(key)
    )
    assert r.status_code == 200 and r.json()["balance_low_threshold_cents"] == 500  # (+ email: issue 34)
    ep = (
        await client.post(
            BASE,
            json={"url": "http://127.0.0.1:9/", "event_types": ["wallet.balance_low"]},
            headers=bearer(key),
        )
    ).json()
    await account.credit(1000)
    for cents in (400, 200, 100):  # 1000 -> 600 (above) -> 400 (crosses) -> 300 (already below)
        async with platform.db.unit_of_work() as uow:
            await wallet.debit(uow.session, account.customer_id, cents, "purchase", "test")
            await uow.commit()
    items = (await client.get(f"{BASE}/{ep['endpoint_id']}/deliveries", headers=bearer(key))).json()["items"]
    assert [d["payload"]["data"] for d in items] == [{"balance_cents": 400, "threshold_cents": 500}]
    r = await client.get("/api/v1/customer/me/notifications", headers=bearer(key))
    assert r.json()["balance_low_threshold_cents"] == 500
