"""sticky list/rotate/changettl/resetall, stats, rate, networkstatus/errors: exact bodies, v1 agreement."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

import proxyplane.domains.quotas.metering as quota_metering
from proxyplane.core.clock import utcnow
from proxyplane.domains.services import service as services
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import StickySession
from proxyplane.storage.repos.usage_minutes import add_usage
from tests.adapters.legacy.support import JSON, auth, buy, rotating_product, static_product
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
GENERIC = b'{"error":"Unprocessable Entity"}'


async def _rotating(client: httpx.AsyncClient, platform: Platform, account: Account) -> tuple[int, str]:
    await fresh_stock(platform, "proxy_datacenter", "MD", 6)
    await account.credit(10_000)
    number = (await buy(client, account, (await rotating_product(platform))[0], setip=None))["serviceId"]
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        return number, str(svc.service_id)


async def _session(platform: Platform, service_id: str, sid: str, ip: str) -> StickySession:
    import uuid

    now = utcnow().replace(microsecond=0)
    row = StickySession(
        service_id=uuid.UUID(service_id),
        sid=sid,
        exit_ip=ip,
        started_at=now,
        expires_at=now + timedelta(minutes=10),
        ended=False,
        writer="node-test",
        updated_at=now,
    )
    async with platform.db.unit_of_work() as uow:
        uow.session.add(row)
        await uow.commit()
    return row


async def test_sticky_list_rotate_reset(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    number, sid = await _rotating(client, platform, account)
    r = await client.get(f"/api/sticky/list/{number}", headers=auth(account))
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, b"[]", JSON)
    key = await account.key()
    cfg = (await client.get(f"/api/v1/customer/services/{sid}/proxy/config", headers=bearer(key))).json()
    pool = cfg["countries"]
    assert pool
    row = await _session(platform, sid, "abc123", "127.0.0.250")
    r = await client.get(f"/api/sticky/list/{number}", headers=auth(account))
    stamp = row.started_at.strftime("%Y-%m-%d %H:%M:%S")
    until = row.expires_at.strftime("%Y-%m-%d %H:%M:%S")
    assert (
        r.content
        == (
            f'[{{"session":"abc123","server":"127.0.0.1","ip":"127.0.0.250","started_at":"{stamp}",'
            f'"expires_at":"{until}"}}]'
        ).encode()
    )
    r = await client.get(f"/api/sticky/rotate/{number}/127.0.0.1/abc123", headers=auth(account))
    assert r.status_code == 200, r.text
    rotated = r.json()
    assert rotated["session"] == "abc123" and rotated["ip"] != "127.0.0.250"
    v1 = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/sticky/sessions", headers=bearer(key))
    ).json()
    assert [(s["sid"], s["exit_ip"]) for s in v1["sessions"]] == [("abc123", rotated["ip"])]
    for path in (
        f"/api/sticky/rotate/{number}/other-server/abc123",
        f"/api/sticky/rotate/{number}/127.0.0.1/nosuch",
        "/api/sticky/rotate/abc/127.0.0.1/abc123",
    ):
        r = await client.get(path, headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC), path
    r = await client.get(f"/api/sticky/resetall/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b'{"reset":1}')
    assert (await client.get(f"/api/sticky/list/{number}", headers=auth(account))).content == b"[]"
    v1 = (
        await client.get(f"/api/v1/customer/services/{sid}/proxy/sticky/sessions", headers=bearer(key))
    ).json()
    assert v1["sessions"] == []


async def test_changettl(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    number, sid = await _rotating(client, platform, account)
    key = await account.key()
    for ttl in (1, 2, 3, 5, 10, 15):
        r = await client.get(f"/api/sticky/changettl/{number}/{ttl}", headers=auth(account))
        assert (r.status_code, r.content) == (200, f'{{"ttl":{ttl}}}'.encode())
        mode = (
            await client.get(f"/api/v1/customer/services/{sid}/proxy/sticky/mode", headers=bearer(key))
        ).json()
        assert mode["ttl_minutes"] == ttl
    for bad in ("0", "4", "20", "x", "-5"):
        r = await client.get(f"/api/sticky/changettl/{number}/{bad}", headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC)


async def test_sticky_on_static_and_foreign(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(10_000)
    static = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    assert (await client.get(f"/api/sticky/list/{static}", headers=auth(account))).content == b"[]"
    assert (await client.get(f"/api/sticky/resetall/{static}", headers=auth(account))).content == b"[]"
    r = await client.get(f"/api/sticky/changettl/{static}/5", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"")
    r = await client.get(f"/api/sticky/rotate/{static}/127.0.0.1/abc", headers=auth(account))
    assert (r.status_code, r.content) == (422, GENERIC)
    other = await make_account(platform)
    r = await client.get(f"/api/sticky/list/{static}", headers=auth(other))
    assert (r.status_code, r.content) == (
        422,
        f'{{"error":"Unprocessable Entity. Service {static} not found"}}'.encode(),
    )
    for path in (f"/api/sticky/resetall/{static}", f"/api/sticky/changettl/{static}/5"):
        r = await client.get(path, headers=auth(other))
        assert (r.status_code, r.content) == (422, GENERIC)


async def test_stats_rate_errors(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    import uuid

    number, sid = await _rotating(client, platform, account)
    r = await client.get(f"/api/stats/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"[]")
    r = await client.get(f"/api/rate/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b'[{"limit":1000,"rate":0}]')
    now = utcnow().replace(second=0, microsecond=0)
    minutes = [
        {"service_id": uuid.UUID(sid), "minute": now, "host": host, "requests": n, "connections": n}
        | {"bytes_up": 100, "bytes_down": 1000, "errors": 0}
        for host, n in (("a.example", 7), ("b.example", 5))
    ]
    # 3 days back (read from the daily rollups) and 31 days back (outside the 30 days)
    for back, n in ((timedelta(days=3, minutes=7), 4), (timedelta(days=31), 9)):
        minutes.append(minutes[0] | {"minute": now - back, "requests": n})
    async with platform.db.unit_of_work() as uow:
        await add_usage(uow.session, minutes, [])
        await quota_metering.apply_usage(uow.session, minutes[:2])  # the gateway's flush of this minute
        await uow.commit()
    day, before = now.strftime("%Y-%m-%d"), (now - timedelta(days=3, minutes=7)).strftime("%Y-%m-%d")
    r = await client.get(f"/api/stats/{number}", headers=auth(account))
    assert r.content == f'[{{"date":"{before}","rate":4}},{{"date":"{day}","rate":12}}]'.encode()
    r = await client.get(f"/api/rate/{number}", headers=auth(account))
    assert r.content == b'[{"limit":1000,"rate":12}]'
    await account.credit(1)
    static = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    for path in (f"/api/stats/{static}", f"/api/rate/{static}", "/api/stats/x", "/api/rate/99999999"):
        r = await client.get(path, headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC), path
    r = await client.get(f"/api/networkstatus/errors/{static}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"[]")
    other = await make_account(platform)
    r = await client.get(f"/api/networkstatus/errors/{static}", headers=auth(other))
    assert (r.status_code, r.content) == (400, b'{"error":"Unprocessable Entity. ClientID not found"}')


async def test_rate_reads_the_enforced_quota(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    """Issue 32: /api/rate of a metered bandwidth plan is its period's limit (bought traffic included) and
    use in MB, as get_service_quota reads them."""
    from tests.adapters.legacy.support import GATEWAY, add_product
    from tests.domains.quotas.support import flush

    config = {"plan": "bandwidth", "quota_bytes": 2 * 10**9, "quota_period": "month", "gb_price_cents": 100}
    config |= {"exit_pool": "proxy_datacenter", "gateway": GATEWAY}
    pid, _ = await add_product(platform, "proxy_rotating", 400, config)
    await fresh_stock(platform, "proxy_datacenter", "MD", 6)
    await account.credit(10_000)
    number = (await buy(client, account, pid, setip=None))["serviceId"]
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
    await flush(platform, svc.service_id, 1_234_567_890)
    r = await client.get(f"/api/rate/{number}", headers=auth(account))
    assert r.content == b'[{"limit":2000,"rate":1234.57}]'
    h = bearer(await account.key())
    url = f"/api/v1/customer/services/{svc.service_id}/traffic"
    assert (await client.post(url, json={"gb": 1, "idempotency_key": "l1"}, headers=h)).status_code == 200
    r = await client.get(f"/api/rate/{number}", headers=auth(account))
    assert r.content == b'[{"limit":3000,"rate":1234.57}]'
