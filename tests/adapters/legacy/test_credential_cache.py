"""The legacy door's credential cache (adapters/legacy/auth.py) never outlives what it cached: an app
password revoked, or two-factor turned on (the main password is then refused), stops a credential the
cache already holds on the very next request, not CACHE_SECONDS later (issue 34 door, found by h3)."""

from __future__ import annotations

import httpx
import pyotp
import pytest

from proxyplane.domains.accounts import two_factor
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from tests.adapters.legacy.support import basic
from tests.support import Account, make_account

pytestmark = pytest.mark.anyio


def _me(account: Account) -> Caller:
    return Caller(customer_id=account.customer_id, client_ip="127.0.0.43", channel="web")


async def _enable(platform: Platform, account: Account) -> list[str]:
    """Two-factor on; its recovery codes."""
    setup = await invoke(platform, two_factor.SETUP, _me(account), two_factor.Empty())
    code = two_factor.Code(code=pyotp.TOTP(setup.secret).now())
    codes = (await invoke(platform, two_factor.ENABLE, _me(account), code)).recovery_codes
    assert len(codes) == 10
    return codes


async def test_a_revoked_app_password_stops_at_once_though_cached(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    await _enable(platform, account)
    app = await invoke(
        platform, two_factor.CREATE_APP_PASSWORD, _me(account), two_factor.NewAppPassword(name="cron")
    )
    headers = basic(account.email, app.password)
    assert (await client.get("/api/clients", headers=headers)).status_code == 200  # now cached
    assert (await client.get("/api/clients", headers=headers)).status_code == 200
    await invoke(platform, two_factor.REVOKE_APP_PASSWORD, _me(account), two_factor.AppPasswordRef(id=app.id))
    assert (await client.get("/api/clients", headers=headers)).status_code == 401


async def test_turning_two_factor_on_stops_the_cached_main_password(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    headers = basic(account.email, account.password)
    assert (await client.get("/api/clients", headers=headers)).status_code == 200  # now cached
    await _enable(platform, account)
    assert (await client.get("/api/clients", headers=headers)).status_code == 401


async def test_turning_two_factor_off_stops_the_cached_app_password(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    codes = await _enable(platform, account)
    app = await invoke(
        platform, two_factor.CREATE_APP_PASSWORD, _me(account), two_factor.NewAppPassword(name="cron")
    )
    headers = basic(account.email, app.password)
    assert (await client.get("/api/clients", headers=headers)).status_code == 200  # now cached
    off = two_factor.Disable(code=codes[0], current_password=account.password)
    assert not (await invoke(platform, two_factor.DISABLE, _me(account), off)).enabled
    # two-factor off: the main password decides again, and an app password is not it
    assert (await client.get("/api/clients", headers=headers)).status_code == 401
    main = await client.get("/api/clients", headers=basic(account.email, account.password))
    assert main.status_code == 200
