"""Two-factor sign-in (issue 34) through the real app: set up with a first code, 10 single-use recovery
codes, the dashboard's sign-in (and so the OAuth consent page's) asks for a code, wrong codes are
throttled per account and address, and the legacy Basic API takes an app password, not the main one."""

from __future__ import annotations

import re
import secrets
import time

import httpx
import pyotp
import pytest

from proxyplane.domains.accounts import two_factor, web_ops
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform
from tests.adapters.legacy.support import basic
from tests.support import Account, make_account

pytestmark = pytest.mark.anyio
IP = ["127.0.0.41"]  # this test's own address: wrong codes count per address too, over every account


@pytest.fixture(autouse=True)
def own_address() -> None:
    IP[0] = fresh_ip()


def fresh_ip() -> str:
    return f"127.{secrets.randbelow(254) + 1}.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def _me(account: Account) -> Caller:
    return Caller(customer_id=account.customer_id, client_ip=IP[0], channel="web")


async def _enable(platform: Platform, account: Account) -> tuple[pyotp.TOTP, list[str]]:
    setup = await invoke(platform, two_factor.SETUP, _me(account), two_factor.Empty())
    assert setup.uri.startswith("otpauth://totp/") and "<svg" in setup.qr_svg
    otp = pyotp.TOTP(setup.secret)
    codes = await invoke(platform, two_factor.ENABLE, _me(account), two_factor.Code(code=otp.now()))
    assert len(codes.recovery_codes) == 10 == len(set(codes.recovery_codes))
    return otp, codes.recovery_codes


async def _password(platform: Platform, account: Account, client_ip: str = "") -> web_ops.Signed:
    caller = Caller(customer_id=None, client_ip=client_ip or IP[0], channel="web", user_agent="pytest")
    return await invoke(
        platform, web_ops.SIGN_IN, caller, web_ops.SignIn(email=account.email, password=account.password)
    )


async def _code(platform: Platform, pending: str, code: str, client_ip: str = "") -> web_ops.Signed:
    caller = Caller(customer_id=None, client_ip=client_ip or IP[0], channel="web", user_agent="pytest")
    return await invoke(
        platform, two_factor.SIGN_IN_CODE, caller, two_factor.CodeSignIn(pending=pending, code=code)
    )


async def test_sign_in_asks_for_a_code_and_recovery_codes_work_once(platform: Platform) -> None:
    account = await make_account(platform)
    otp, codes = await _enable(platform, account)
    first = await _password(platform, account)
    assert first.outcome == "second_factor" and first.customer_id is None  # no session yet
    assert (
        await _code(platform, first.token, "000000" if otp.now() != "000000" else "111111")
    ).outcome == "wrong"
    signed = await _code(platform, first.token, otp.at(time.time() + 30))  # the next step: not used yet
    assert signed.outcome == "ok" and signed.token
    replay = await _password(platform, account)
    assert (await _code(platform, replay.token, otp.at(time.time() + 30))).outcome == "wrong"  # once only
    assert (await _code(platform, replay.token, codes[0])).outcome == "ok"
    again = await _password(platform, account)
    assert (await _code(platform, again.token, codes[0])).outcome == "wrong"  # used
    assert (await _code(platform, again.token, codes[1].upper())).outcome == "ok"
    status = await invoke(platform, two_factor.STATUS, _me(account), two_factor.Empty())
    assert status.enabled and status.recovery_codes_left == 8
    assert (await _code(platform, "1.2.forged", codes[2])).outcome == "expired"


async def test_wrong_codes_are_throttled_per_account(platform: Platform) -> None:
    account = await make_account(platform)
    otp, codes = await _enable(platform, account)
    pending = (await _password(platform, account)).token
    outcomes = [(await _code(platform, pending, "12345x")).outcome for _ in range(6)]
    assert outcomes[:5] == ["wrong"] * 5 and outcomes[5] == "throttled"
    # throttled: even a right code is not checked now, from this address or any other (the account's count)
    assert (await _code(platform, pending, codes[0])).outcome == "throttled"
    elsewhere = fresh_ip()
    assert (await _code(platform, pending, codes[0], elsewhere)).outcome == "throttled"
    fresh = await make_account(platform)  # the address's count (5 of 10) leaves another account alone
    _, theirs = await _enable(platform, fresh)
    step = await _password(platform, fresh)
    assert (await _code(platform, step.token, theirs[0])).outcome == "ok"


async def test_wrong_codes_are_throttled_per_address_over_every_account(platform: Platform) -> None:
    """One address guessing the codes of many accounts (it holds their passwords): after 10 wrong codes
    over them all it is slowed on a third account too, while that account's owner, elsewhere, gets in."""
    pendings = []
    for _ in range(3):
        account = await make_account(platform)
        _, codes = await _enable(platform, account)
        pendings.append(((await _password(platform, account)).token, codes))
    outcomes = [(await _code(platform, pendings[i // 5][0], "12345x")).outcome for i in range(10)]
    assert outcomes == ["wrong"] * 10  # 5 on each of two accounts: each within its own burst
    token, codes = pendings[2]
    assert (await _code(platform, token, "12345x")).outcome == "throttled"  # the address's burst is
    assert (await _code(platform, token, codes[0])).outcome == "throttled"  # a right code is not checked
    assert (await _code(platform, token, codes[0], fresh_ip())).outcome == "ok"  # the owner, elsewhere


async def test_dashboard_sign_in_shows_the_code_step(platform: Platform, client: httpx.AsyncClient) -> None:
    account = await make_account(platform)
    otp, _ = await _enable(platform, account)
    page = await client.get("/login?next=/oauth/consent%3Frequest%3Dx")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    form = {"csrf": csrf.group(1), "email": account.email, "password": account.password, "next": "/keys"}
    step = await client.post("/login", data=form)
    assert step.status_code == 200 and "Enter your code" in step.text
    assert "pp_session" not in step.cookies
    pending = re.search(r'name="pending" value="([^"]+)"', step.text)
    assert pending is not None
    done = await client.post(
        "/login/code",
        data={
            "csrf": csrf.group(1),
            "pending": pending.group(1),
            "code": otp.at(time.time() + 30),
            "next": "/keys",
        },
    )
    assert done.status_code == 303 and done.headers["location"] == "/keys"
    assert "pp_session" in done.cookies


async def test_legacy_basic_takes_an_app_password_once_two_factor_is_on(
    platform: Platform, client: httpx.AsyncClient
) -> None:
    account = await make_account(platform)
    await _enable(platform, account)
    created = await invoke(
        platform, two_factor.CREATE_APP_PASSWORD, _me(account), two_factor.NewAppPassword(name="cron")
    )
    assert created.password.startswith("ppa-")
    refused = await client.get("/api/clients", headers=basic(account.email, account.password))
    assert refused.status_code == 401  # the main password: not on the Basic API once two-factor is on
    app = await client.get("/api/clients", headers=basic(account.email, created.password))
    assert app.status_code == 200
    status = await invoke(platform, two_factor.STATUS, _me(account), two_factor.Empty())
    assert [(a.name, a.last_used_at is not None) for a in status.app_passwords] == [("cron", True)]
    other = await invoke(
        platform, two_factor.CREATE_APP_PASSWORD, _me(account), two_factor.NewAppPassword(name="other")
    )
    await invoke(
        platform, two_factor.REVOKE_APP_PASSWORD, _me(account), two_factor.AppPasswordRef(id=other.id)
    )
    revoked = await client.get("/api/clients", headers=basic(account.email, other.password))
    assert revoked.status_code == 401  # never verified before its revocation: refused


async def test_turning_off_needs_a_code_and_wrong_codes_count(platform: Platform) -> None:
    account = await make_account(platform)
    otp, codes = await _enable(platform, account)
    wrong = two_factor.Disable(code="99999z", current_password=account.password)
    outcomes = [(await invoke(platform, two_factor.DISABLE, _me(account), wrong)).outcome for _ in range(6)]
    assert outcomes == ["wrong"] * 5 + ["throttled"]  # each wrong code was committed to the throttle
    right = two_factor.Disable(code=codes[0], current_password=account.password)
    assert (await invoke(platform, two_factor.DISABLE, _me(account), right)).outcome == "throttled"
    assert (await invoke(platform, two_factor.STATUS, _me(account), two_factor.Empty())).enabled


async def test_new_recovery_codes_replace_the_old(platform: Platform) -> None:
    account = await make_account(platform)
    otp, codes = await _enable(platform, account)
    fresh = await invoke(platform, two_factor.NEW_CODES, _me(account), two_factor.Code(code=codes[0]))
    assert fresh.outcome == "ok" and len(fresh.recovery_codes) == 10
    off = two_factor.Disable(code=codes[1], current_password=account.password)  # an old code: gone
    assert (await invoke(platform, two_factor.DISABLE, _me(account), off)).outcome == "wrong"
    off = two_factor.Disable(code=fresh.recovery_codes[0], current_password=account.password)
    state = await invoke(platform, two_factor.DISABLE, _me(account), off)
    assert state.outcome == "ok" and not state.enabled
    assert (await _password(platform, account)).outcome == "ok"  # no code step any more
