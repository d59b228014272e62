"""An IPv6 service's term (issue 16): a manual renew and the renewal job's auto-renew extend it and keep
its subnets; the job's expiry releases them, and the next order gets those released subnets back (reused
before the prefix's cursor moves on)."""

from __future__ import annotations

import ipaddress
import uuid
from datetime import datetime, timedelta

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.domains.renewals import steps
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway import StickySession
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
API = "/api/v1"
COUNTRY = "NO"


def order(count: int) -> dict[str, object]:
    return {
        "product_kind": "proxy_ipv6",
        "period_months": 1,
        "segments": [{"country": COUNTRY, "count": count}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }


async def free(client: httpx.AsyncClient) -> int:
    r = await client.get(f"{API}/billing/countries?product_kind=proxy_ipv6")
    return next((c["available_ips"] for c in r.json()["countries"] if c["code"] == COUNTRY), 0)


async def job_step(platform: Platform, number: int, step: str) -> str | None:
    """One step of the renewal job for this service, at its term's end (what run_pass does per service)."""
    async with platform.db.unit_of_work() as uow:
        svc = await uow.session.get(Service, number)
        assert svc is not None and svc.current_period_end is not None
        now: datetime = svc.current_period_end + timedelta(minutes=1)
        if step == "renew":
            done = await steps.renew(uow.session, number, now, RenewalPolicy())
        else:
            done = await steps.expire(uow.session, number, now)
        if done.keep:
            await uow.commit()
        return done.outcome


async def test_renew_expire_and_reuse(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    try:
        await _run(client, platform, account)
    finally:
        await retire_country(platform, COUNTRY)


async def _run(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    prefix = ipaddress.IPv6Network(await fresh_prefix(platform, COUNTRY, length=62))  # 4 /64s
    key = await account.key()
    await account.credit(100_000)
    r = await client.post(f"{API}/billing/composite/order", json=order(2), headers=bearer(key))
    assert r.status_code == 201, r.text
    svc = r.json()["service"]
    held = sorted(i["ip"] for i in svc["ips"])
    base = f"{API}/customer/services/{svc['service_id']}"

    r = await client.post(
        f"{base}/renew", json={"period_months": 1, "idempotency_key": uuid.uuid4().hex}, headers=bearer(key)
    )
    assert r.status_code == 200, r.text
    renewed = r.json()["service"]
    assert renewed["expires_at"] > svc["expires_at"] and sorted(i["ip"] for i in renewed["ips"]) == held

    r = await client.put(f"{base}/auto-renew", json={"auto_renew": True}, headers=bearer(key))
    assert r.status_code == 200, r.text
    assert await job_step(platform, svc["service_number"], "renew") == "renewed"
    got = (await client.get(base, headers=bearer(key))).json()
    assert got["expires_at"] > renewed["expires_at"] and sorted(i["ip"] for i in got["ips"]) == held
    assert await free(client) == 2

    r = await client.put(f"{base}/auto-renew", json={"auto_renew": False}, headers=bearer(key))
    assert r.status_code == 200, r.text
    assert await job_step(platform, svc["service_number"], "expire") == "expired"
    got = (await client.get(base, headers=bearer(key))).json()
    assert got["status"] == "expired" and got["ips"] == []
    assert await free(client) == 4  # the expired service's subnets are free again

    other = await make_account(platform)
    await other.credit(100_000)
    r = await client.post(f"{API}/billing/composite/order", json=order(4), headers=bearer(await other.key()))
    assert r.status_code == 201, r.text
    again = sorted(i["ip"] for i in r.json()["service"]["ips"])
    assert set(held) <= set(again) and again == sorted(str(s) for s in prefix.subnets(new_prefix=64))
    assert await free(client) == 0


async def test_rotate_a_sticky_session_inside_the_subnet(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """Rotating a sticky session of an IPv6 service draws a new address of its subnet (not an IPv4 exit)."""
    try:
        await fresh_prefix(platform, COUNTRY, length=62)
        key = await account.key()
        await account.credit(100_000)
        r = await client.post(f"{API}/billing/composite/order", json=order(1), headers=bearer(key))
        assert r.status_code == 201, r.text
        svc = r.json()["service"]
        subnet = ipaddress.IPv6Network(svc["ips"][0]["ip"])
        now = utcnow().replace(microsecond=0)
        old = str(subnet[7])
        async with platform.db.unit_of_work() as uow:
            uow.session.add(
                StickySession(
                    service_id=uuid.UUID(svc["service_id"]),
                    sid="v6sess",
                    exit_ip=old,
                    started_at=now,
                    expires_at=now + timedelta(minutes=10),
                    ended=False,
                    writer="node-test",
                    updated_at=now,
                )
            )
            await uow.commit()
        base = f"{API}/customer/services/{svc['service_id']}/proxy/sticky/sessions/v6sess/rotate"
        r = await client.post(base, json={}, headers=bearer(key))
        assert r.status_code == 200, r.text
        new = ipaddress.IPv6Address(r.json()["exit_ip"])
        assert new in subnet and str(new) != old and new != subnet.network_address
    finally:
        await retire_country(platform, COUNTRY)
