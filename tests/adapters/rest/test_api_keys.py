"""API keys and scopes through the real app."""

import httpx
import pytest

from proxyplane.core.scopes import ALL_SCOPES
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio


async def test_create_returns_secret_once_and_list_hides_it(
    client: httpx.AsyncClient, account: Account
) -> None:
    admin = await account.key({"customer:read", "customer:write", "wallet:read"})
    r = await client.post(
        "/api/v1/customers/me/api-keys",
        json={"name": "bot", "scopes": ["wallet:read"]},
        headers=bearer(admin),
    )
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["secret"].startswith("ppk_") and created["scopes"] == ["wallet:read"]
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(admin))).json()
    assert isinstance(listed, list)
    mine = next(k for k in listed if k["key_id"] == created["key_id"])
    assert "secret" not in mine and mine["name"] == "bot" and mine["last_used_at"] is None
    # the new key works, and its use is recorded with the client IP
    assert (
        await client.get("/api/v1/customer/wallet/balance", headers=bearer(created["secret"]))
    ).status_code == 200
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(admin))).json()
    mine = next(k for k in listed if k["key_id"] == created["key_id"])
    assert mine["last_used_at"] is not None and mine["last_used_ip"] == "127.0.0.9"


async def test_revoked_key_is_refused_at_once(client: httpx.AsyncClient, account: Account) -> None:
    admin = await account.key()
    victim = (
        await client.post(
            "/api/v1/customers/me/api-keys",
            json={"name": "v", "scopes": ["wallet:read"]},
            headers=bearer(admin),
        )
    ).json()
    assert (
        await client.get("/api/v1/customer/wallet/balance", headers=bearer(victim["secret"]))
    ).status_code == 200
    r = await client.delete(f"/api/v1/customers/me/api-keys/{victim['key_id']}", headers=bearer(admin))
    assert r.status_code == 200 and "revoked" in r.json()["message"]
    r = await client.get("/api/v1/customer/wallet/balance", headers=bearer(victim["secret"]))
    assert r.status_code == 401 and r.json()["detail"]["error"] == "unauthorized"
    listed = (await client.get("/api/v1/customers/me/api-keys", headers=bearer(admin))).json()
    assert victim["key_id"] not in [k["key_id"] for k in listed]


async def test_missing_and_invalid_keys_are_401(client: httpx.AsyncClient) -> None:
    r = await client.get("/api/v1/customer/me")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert (await client.get("/api/v1/customer/me", headers=bearer("ppk_nope"))).status_code == 401
    assert (
        await client.get("/api/v1/customer/me", headers={"Authorization": "Basic abc"})
    ).status_code == 401


@pytest.mark.parametrize(
    ("method", "path", "scope", "body"),
    [
        ("GET", "/api/v1/customer/me", "customer:read", None),
        ("PATCH", "/api/v1/customer/me", "customer:write", {"name": "X"}),
        ("GET", "/api/v1/customer/wallet/balance", "wallet:read", None),
        ("GET", "/api/v1/customer/wallet/ledger", "wallet:read", None),
        (
            "POST",
            "/api/v1/customer/wallet/deposit/init",
            "wallet:deposit",
            {"amount_cents": 1000, "payment_method": "card", "idempotency_key": "k1"},
        ),
        ("GET", "/api/v1/customers/me/api-keys", "customer:read", None),
        ("POST", "/api/v1/customers/me/api-keys", "customer:write", {"name": "n", "scopes": ["wallet:read"]}),
    ],
)
async def test_each_scope_is_required(
    client: httpx.AsyncClient, account: Account, method: str, path: str, scope: str, body: dict | None
) -> None:
    key = await account.key(ALL_SCOPES - {scope})
    r = await client.request(method, path, json=body, headers=bearer(key))
    assert r.status_code == 403, r.text
    detail = r.json()["detail"]
    assert detail["error"] == "missing_scope" and detail["missing_scopes"] == [scope]
    assert scope in detail["message"]


async def test_key_cannot_grant_scopes_it_lacks(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key({"customer:write", "customer:read"})
    r = await client.post(
        "/api/v1/customers/me/api-keys", json={"name": "x", "scopes": ["wallet:spend"]}, headers=bearer(key)
    )
    assert r.status_code == 403 and r.json()["detail"]["scopes"] == ["wallet:spend"]


async def test_unknown_scope_and_bad_body_are_422(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    for body in (
        {"name": "x", "scopes": ["root"]},
        {"name": "", "scopes": ["wallet:read"]},
        {"name": "x", "scopes": []},
        {"scopes": ["wallet:read"]},
        {"name": "x", "scopes": "wallet:read"},
    ):
        r = await client.post("/api/v1/customers/me/api-keys", json=body, headers=bearer(key))
        assert r.status_code == 422, (body, r.text)
        assert r.json()["detail"]["error"] == "validation_error"


async def test_other_customers_key_is_404(client: httpx.AsyncClient, platform, account: Account) -> None:
    other = await make_account(platform)
    other_key = (
        await client.post(
            "/api/v1/customers/me/api-keys",
            json={"name": "o", "scopes": ["wallet:read"]},
            headers=bearer(await other.key()),
        )
    ).json()
    key = await account.key()
    r = await client.delete(f"/api/v1/customers/me/api-keys/{other_key['key_id']}", headers=bearer(key))
    assert r.status_code == 404 and r.json()["detail"]["error"] == "not_found"
    assert (
        await client.delete("/api/v1/customers/me/api-keys/not-a-uuid", headers=bearer(key))
    ).status_code == 422
    # the other customer's key still works
    r = await client.get("/api/v1/customer/wallet/balance", headers=bearer(other_key["secret"]))
    assert r.status_code == 200
