"""Dashboard (and OAuth consent) sign-in through the shared throttle (issue 30.2-3): wrong passwords slow
the address they come from, an account-wide ceiling slows unknown addresses, and the owner from a known
address still gets in: nobody can lock a customer out."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.accounts import throttle
from proxyplane.platform import Platform
from tests.adapters.web.helpers import PASSWORD, login, signup
from tests.adapters.web.test_accounts import fresh_ip
from tests.support import unique_email

pytestmark = pytest.mark.anyio
WRONG = "guess guess guess"
_APPS: dict[int, object] = {}


def client_from(platform: Platform, ip: str) -> httpx.AsyncClient:
    """A browser at `ip` (one app per platform: the attempts stay quick, so buckets barely drain)."""
    from proxyplane.app import create_app

    app = _APPS.get(id(platform))
    if app is None:
        app = _APPS[id(platform)] = create_app(platform)
    transport = httpx.ASGITransport(app=app, client=(ip, 50000))  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://testserver")


async def owner(platform: Platform) -> tuple[str, str]:
    """A customer who signed up (so signed in) from their own address: (email, address)."""
    ip = fresh_ip()
    async with client_from(platform, ip) as c:
        email = await signup(c)
    return email, ip


async def attempt(platform: Platform, ip: str, email: str, password: str = PASSWORD) -> httpx.Response:
    async with client_from(platform, ip) as c:
        return await login(c, email, password)


async def spent(platform: Platform, key: throttle.Key, failures: int) -> None:
    """`failures` wrong passwords already counted on `key` through the shared throttle (what many
    guesses through any door would have left; argon2 makes each guess over HTTP slow)."""
    async with platform.db.unit_of_work() as uow:
        for _ in range(failures):
            await throttle.record_failure(uow.session, [key])
        await uow.commit()


async def test_wrong_passwords_slow_their_address_not_the_owner(platform: Platform) -> None:
    email, home = await owner(platform)
    attacker = fresh_ip()
    for _ in range(throttle.PASSWORD_ACCOUNT_ADDRESS.burst):
        assert (await attempt(platform, attacker, email, WRONG)).status_code == 401
    refused = await attempt(platform, attacker, email)  # even the right password: nothing is learnt
    assert refused.status_code == 429
    assert "Too many failed sign-ins" in refused.text
    assert 1 <= int(refused.headers["retry-after"]) <= throttle.PASSWORD_ACCOUNT_ADDRESS.drain_seconds
    assert (await attempt(platform, home, email)).status_code == 303  # the owner at home
    assert (await attempt(platform, fresh_ip(), email)).status_code == 303  # and travelling


async def test_account_ceiling_slows_unknown_addresses_and_spares_the_known_one(platform: Platform) -> None:
    email, home = await owner(platform)
    # a botnet, one guess per address: most of the ceiling already spent, the last guesses over HTTP
    account = throttle.Key(throttle.PASSWORD_ACCOUNT, f"customer:{email}")
    await spent(platform, account, throttle.PASSWORD_ACCOUNT.burst - 2)
    for _ in range(2):
        assert (await attempt(platform, fresh_ip(), email, WRONG)).status_code == 401
    slowed = await attempt(platform, fresh_ip(), email)
    assert slowed.status_code == 429
    assert 1 <= int(slowed.headers["retry-after"]) <= throttle.PASSWORD_ACCOUNT.drain_seconds  # not a lock
    assert (await attempt(platform, home, email)).status_code == 303


async def test_one_address_trying_many_accounts_is_slowed(platform: Platform) -> None:
    email, home = await owner(platform)
    stuffer = fresh_ip()
    # one address has tried a burst of accounts already (a margin: the bucket drains 1 per 3 s meanwhile)
    await spent(
        platform, throttle.Key(throttle.PASSWORD_ADDRESS, stuffer), throttle.PASSWORD_ADDRESS.burst + 5
    )
    assert (await attempt(platform, stuffer, unique_email(), WRONG)).status_code == 429
    assert (await attempt(platform, stuffer, email)).status_code == 429
    assert (await attempt(platform, fresh_ip(), email)).status_code == 303
    assert (await attempt(platform, home, email)).status_code == 303


async def device_of(platform: Platform, email: str) -> str:
    """Sign in once from a browser: the known-device cookie it keeps."""
    async with client_from(platform, fresh_ip()) as browser:
        assert (await login(browser, email)).status_code == 303
        return browser.cookies["pp_device"]


async def test_known_device_gets_in_past_the_ceiling(platform: Platform) -> None:
    email, _ = await owner(platform)
    other, _ = await owner(platform)
    device, others_device = await device_of(platform, email), await device_of(platform, other)
    account = throttle.Key(throttle.PASSWORD_ACCOUNT, f"customer:{email}")
    await spent(platform, account, throttle.PASSWORD_ACCOUNT.burst + 2)  # a botnet spent the ceiling
    travelling = fresh_ip()  # an address the owner never signed in from
    assert (await attempt(platform, travelling, email)).status_code == 429
    async with client_from(platform, travelling) as browser:
        browser.cookies.set("pp_device", others_device)  # another account's device: no help
        assert (await login(browser, email)).status_code == 429
        browser.cookies.set("pp_device", device)
        assert (await login(browser, email)).status_code == 303
