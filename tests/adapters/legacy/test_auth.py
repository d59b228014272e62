"""Legacy Basic auth: both separators, 401/400 bodies on every endpoint, login records, the cache."""

from __future__ import annotations

import base64

import httpx
import pytest
from sqlalchemy import func, select, update

from proxyplane.core.security import hash_password
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer, LoginEvent
from tests.adapters.legacy.support import TEXT, auth, basic
from tests.support import Account

pytestmark = pytest.mark.anyio

ENDPOINTS = [
    ("GET", "/api/clients"),
    ("GET", "/api/stats/1"),
    ("GET", "/api/rate/1"),
    ("GET", "/api/networkstatus/errors/1"),
    ("GET", "/api/sticky/list/1"),
    ("GET", "/api/sticky/rotate/1/gw/abc"),
    ("GET", "/api/sticky/changettl/1/5"),
    ("GET", "/api/sticky/resetall/1"),
    ("GET", "/api/product/1"),
    ("POST", "/api/product/1"),
    ("GET", "/api/products"),
    ("GET", "/api/products/orderby/price"),
    ("GET", "/api/networkstatus/inactive/1"),
    ("GET", "/api/billing/credit"),
    ("GET", "/api/service/1"),
    ("PUT", "/api/service/1"),
    ("GET", "/api/services"),
    ("GET", "/api/iplist/http-ip/txt/1"),
]


def _token(text: bytes) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(text).decode()}


async def _logins(platform: Platform, customer_id: int) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        q = select(func.count()).where(LoginEvent.customer_id == customer_id, LoginEvent.channel == "legacy")
        return int(await uow.session.scalar(q) or 0)


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
async def test_every_endpoint_401_and_400(
    client: httpx.AsyncClient, account: Account, method: str, path: str
) -> None:
    cases_401 = [
        {},
        {"Authorization": "Bearer ppk_nothing"},
        basic(account.email, "wrong password"),
        basic("nobody-here@example.com", "whatever1"),
    ]
    for headers in cases_401:
        r = await client.request(method, path, headers=headers)
        assert (r.status_code, r.content, r.headers["content-type"]) == (401, b"Unauthenticated", TEXT)
    cases_400 = [
        {"Authorization": "Basic !!!not-base64!!!"},
        {"Authorization": "Basic"},
        _token(b"no-separator-here"),
        _token(account.email.encode() + b":"),
        _token(b":password-only"),
        _token(b"\xff\xfe:\xff"),
    ]
    for headers in cases_400:
        r = await client.request(method, path, headers=headers)
        assert (r.status_code, r.content, r.headers["content-type"]) == (
            400,
            b"Invalid credentials format",
            TEXT,
        ), headers


async def test_both_separators_and_login_records(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    before = await _logins(platform, account.customer_id)
    expected = f'[{{"id":{account.customer_id},"email":"{account.email}"}}]'.encode()
    for sep in (":", "|"):
        r = await client.get("/api/clients", headers=auth(account, sep))
        assert (r.status_code, r.content, r.headers["content-type"]) == (200, expected, "application/json")
    # the colon and the pipe spell the same credential: one verification, then the cache
    assert await _logins(platform, account.customer_id) == before + 1
    await client.get("/api/clients", headers=basic(account.email, "bad password"))
    assert await _logins(platform, account.customer_id) == before + 2


async def test_password_with_separators_inside(client: httpx.AsyncClient, platform: Platform) -> None:
    from tests.support import make_account

    acc = await make_account(platform, password="p:a|ss word:9")
    for sep in (":", "|"):
        r = await client.get("/api/billing/credit", headers=auth(acc, sep))
        assert (r.status_code, r.content) == (200, b'{"credit":0.00}')


async def test_password_change_invalidates_cache(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    assert (await client.get("/api/clients", headers=auth(account))).status_code == 200
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Customer)
            .where(Customer.id == account.customer_id)
            .values(password_hash=hash_password("a brand new password"))
        )
        await uow.commit()
    r = await client.get("/api/clients", headers=auth(account))
    assert (r.status_code, r.content) == (401, b"Unauthenticated")
    r = await client.get("/api/clients", headers=basic(account.email, "a brand new password", "|"))
    assert r.status_code == 200


async def test_blocked_account_refused(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    assert (await client.get("/api/clients", headers=auth(account))).status_code == 200
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Customer).where(Customer.id == account.customer_id).values(status="blocked")
        )
        await uow.commit()
    r = await client.get("/api/clients", headers=auth(account))
    assert (r.status_code, r.content) == (401, b"Unauthenticated")
