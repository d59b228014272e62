"""GET/PATCH /customer/me."""

import httpx
import pytest

from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def test_profile_read_and_update(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    me = (await client.get("/api/v1/customer/me", headers=bearer(key))).json()
    assert me["email"] == account.email and me["name"] == "Test User" and me["kyc_verified"] is False
    r = await client.patch(
        "/api/v1/customer/me", json={"name": "Ana", "phone": "+49 30 1234567"}, headers=bearer(key)
    )
    assert r.status_code == 200 and r.json()["name"] == "Ana" and r.json()["phone"] == "+49 30 1234567"
    r = await client.patch("/api/v1/customer/me", json={"phone": "+1 555 0100"}, headers=bearer(key))
    assert r.json()["name"] == "Ana" and r.json()["phone"] == "+1 555 0100"


async def test_email_cannot_change(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    r = await client.patch("/api/v1/customer/me", json={"email": "new@example.com"}, headers=bearer(key))
    assert r.status_code == 422 and r.json()["detail"]["errors"][0]["loc"][-1] == "email"
    r = await client.patch(
        "/api/v1/customer/me", json={"name": "Z", "email": "new@example.com"}, headers=bearer(key)
    )
    assert r.status_code == 422
    me = (await client.get("/api/v1/customer/me", headers=bearer(key))).json()
    assert me["email"] == account.email and me["name"] == "Test User"


async def test_bad_profile_input_is_422(client: httpx.AsyncClient, account: Account) -> None:
    key = await account.key()
    for body in ({"phone": "call me"}, {"name": ""}, {"name": 5}, {"name": "x" * 201}):
        r = await client.patch("/api/v1/customer/me", json=body, headers=bearer(key))
        assert r.status_code == 422, body
    r = await client.patch(
        "/api/v1/customer/me",
        content=b"{not json",
        headers={**bearer(key), "Content-Type": "application/json"},
    )
    assert r.status_code == 422
