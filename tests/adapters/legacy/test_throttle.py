"""Legacy Basic through the shared password throttle (issue 30.2-3): guesses from one address are slowed
to the documented 401 `Unauthenticated` (byte for byte, plus Retry-After) even with the right password,
while the owner from a known address still gets in."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.domains.accounts import throttle
from proxyplane.platform import Platform
from tests.adapters.legacy.support import TEXT, auth, basic
from tests.support import Account

pytestmark = pytest.mark.anyio


def address() -> str:
    raw = uuid.uuid4().bytes
    return f"127.{raw[0]}.{raw[1]}.{max(raw[2], 1)}"


def client_from(platform: Platform, ip: str) -> httpx.AsyncClient:
    from proxyplane.app import create_app

    transport = httpx.ASGITransport(app=create_app(platform), client=(ip, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def test_guesses_are_slowed_and_the_owner_still_gets_in(platform: Platform, account: Account) -> None:
    home, attacker = address(), address()
    async with client_from(platform, home) as owner:
        assert (await owner.get("/api/billing/credit", headers=auth(account))).status_code == 200
    async with client_from(platform, attacker) as c:
        for _ in range(throttle.PASSWORD_ACCOUNT_ADDRESS.burst):
            r = await c.get("/api/billing/credit", headers=basic(account.email, "a wrong guess"))
            assert (r.status_code, r.content) == (401, b"Unauthenticated")
            assert "retry-after" not in r.headers
        # the right password, too soon: refused although the owner's success is in the credential cache
        refused = await c.get("/api/billing/credit", headers=auth(account))
    assert (refused.status_code, refused.content, refused.headers["content-type"]) == (
        401,
        b"Unauthenticated",
        TEXT,
    )
    assert 1 <= int(refused.headers["retry-after"]) <= throttle.PASSWORD_ACCOUNT_ADDRESS.drain_seconds
    platform.legacy_credential_cache = None  # type: ignore[attr-defined]  # no cached success helps
    async with client_from(platform, home) as owner:
        assert (await owner.get("/api/billing/credit", headers=auth(account))).status_code == 200
