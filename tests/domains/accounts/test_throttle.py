"""The shared throttle (domains/accounts/throttle.py over auth_throttles): state shared by two Platform
instances on one database (two API processes), slow-not-lock per (account, address) with an account
ceiling that spares the owner's known address and device; both engines."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from proxyplane.core.settings import Settings
from proxyplane.domains.accounts import throttle
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database

pytestmark = pytest.mark.anyio

ATTACKER = "127.0.66.1"
OWNER = "127.0.77.1"


@pytest.fixture
async def second(settings: Settings) -> AsyncIterator[Platform]:
    """Another API process: its own Platform and connection pool on the same database."""
    p = Platform(settings, Database(settings.resolved_database_url()))
    yield p
    await p.close()


def account() -> str:
    return f"customer:throttle-{uuid.uuid4().hex[:10]}@example.com"


async def fail(p: Platform, keys: list[throttle.Key]) -> None:
    async with p.db.unit_of_work() as uow:
        await throttle.record_failure(uow.session, keys)
        await uow.commit()


async def decision(p: Platform, keys: list[throttle.Key]) -> throttle.Decision:
    async with p.db.unit_of_work() as uow:
        d = await throttle.check(uow.session, keys)
        await uow.commit()
    return d


async def test_failures_in_one_process_throttle_the_other(platform: Platform, second: Platform) -> None:
    keys = throttle.password_keys(account(), ATTACKER)
    for _ in range(throttle.PASSWORD_ACCOUNT_ADDRESS.burst):
        assert (await decision(second, keys)).allowed
        await fail(platform, keys)
    refused = await decision(second, keys)
    assert not refused.allowed
    assert refused.key.startswith("pw-acct-ip:")
    assert 290 < refused.retry_after <= 300  # one more guess per 5 minutes, not a lock


async def test_owner_gets_in_while_attacker_addresses_are_slowed(
    platform: Platform, second: Platform
) -> None:
    name = account()
    # an attacker spreading guesses over many addresses spends the account-wide ceiling
    for i in range(throttle.PASSWORD_ACCOUNT.burst):
        await fail(platform if i % 2 else second, throttle.password_keys(name, f"127.0.88.{i + 1}"))
    fresh = await decision(platform, throttle.password_keys(name, "127.0.99.1"))
    assert not fresh.allowed and fresh.key.startswith("pw-acct:") and fresh.retry_after <= 30
    # the owner: from an address they signed in from before, or a browser holding a device cookie
    assert (await decision(second, throttle.password_keys(name, OWNER, known_address=True))).allowed
    device = throttle.device_of("k", throttle.device_token("k", name), name)
    assert device is not None
    assert (await decision(platform, throttle.password_keys(name, ATTACKER, device=device))).allowed


async def test_success_resets_the_pair_not_the_address(platform: Platform) -> None:
    name = account()
    keys = throttle.password_keys(name, ATTACKER)
    for _ in range(throttle.PASSWORD_ACCOUNT_ADDRESS.burst):
        await fail(platform, keys)
    assert not (await decision(platform, keys)).allowed
    async with platform.db.unit_of_work() as uow:
        await throttle.record_success(uow.session, keys)
        await uow.commit()
    assert (await decision(platform, keys)).allowed
    async with platform.db.unit_of_work(write=False) as uow:
        from proxyplane.storage.repos import throttles as repo

        levels = await repo.read(uow.session, [k.name for k in keys])
    assert (
        levels[keys[1].name][0] >= throttle.PASSWORD_ACCOUNT_ADDRESS.burst - 0.1
    )  # the address's count stays


def test_device_tokens_are_bound_to_account_and_key() -> None:
    token = throttle.device_token("secret", "customer:a@example.com")
    assert throttle.device_of("secret", token, "customer:A@example.com ") is not None
    assert throttle.device_of("secret", token, "customer:b@example.com") is None
    assert throttle.device_of("other", token, "customer:a@example.com") is None
    assert throttle.device_of("secret", "garbage", "customer:a@example.com") is None


def test_ipv6_is_throttled_per_64() -> None:
    assert throttle.address_subject("::1") == "::/64"
    assert throttle.address_subject("::ffff:127.0.0.1") == "127.0.0.1"
    assert throttle.address_subject("127.0.0.1") == "127.0.0.1"
