"""Dashboard sign-ups throttled per address and over the platform (issue 30.4), the state shared through
the database (domains/accounts/throttle.py): 429 with Retry-After, another address still signs up."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.adapters.web.helpers import PASSWORD, csrf_of
from tests.adapters.web.test_accounts import fresh_ip
from tests.support import unique_email

pytestmark = pytest.mark.anyio


async def platform_with(settings: Settings, **numbers: int) -> Platform:
    return Platform(settings.model_copy(update=numbers), Database(settings.resolved_database_url()))


@pytest.fixture
async def strict(settings: Settings) -> AsyncIterator[Platform]:
    """The shipped per-address number (the suite relaxes it: tests/conftest.py)."""
    p = await platform_with(settings, signup_per_address=Settings.model_fields["signup_per_address"].default)
    yield p
    await p.close()


async def sign_up(platform: Platform, ip: str) -> httpx.Response:
    from proxyplane.app import create_app

    transport = httpx.ASGITransport(app=create_app(platform), client=(ip, 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        page = await c.get("/signup")
        form = {"csrf": csrf_of(page), "email": unique_email(), "password": PASSWORD, "password2": PASSWORD}
        return await c.post("/signup", data=form)


async def test_sign_ups_per_address(strict: Platform) -> None:
    ip = fresh_ip()
    allowed = strict.settings.signup_per_address
    assert allowed == 5
    for _ in range(allowed):
        assert (await sign_up(strict, ip)).status_code == 303
    refused = await sign_up(strict, ip)
    assert refused.status_code == 429
    assert "Too many sign-ups from this address" in refused.text
    assert 1 <= int(refused.headers["retry-after"]) <= 3600 // allowed
    assert (await sign_up(strict, fresh_ip())).status_code == 303  # another address


async def test_sign_ups_over_the_platform_shared_by_processes(settings: Settings) -> None:
    """Two API processes (two Platforms, one database) share the platform-wide ceiling."""
    total = 3
    first = await platform_with(settings, signup_total=total)
    second = await platform_with(settings, signup_total=total)
    try:
        answers = []
        for i in range(total + 2):  # each from its own address: only the platform-wide key limits
            r = await sign_up(first if i % 2 else second, fresh_ip())
            answers.append(r.status_code)
            if r.status_code == 429:
                assert int(r.headers["retry-after"]) >= 1
                break
        assert answers[-1] == 429 and set(answers[:-1]) <= {303}
        assert len(answers) <= total + 1
    finally:
        await first.close()
        await second.close()
