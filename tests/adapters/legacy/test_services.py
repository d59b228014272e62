"""clients, billing/credit, services, service GET/PUT: exact bodies, and the same data as v1."""

from __future__ import annotations

import base64
from datetime import timedelta

import httpx
import pytest

from proxyplane.core.clock import utcnow
from proxyplane.domains.services import service as services
from proxyplane.platform import Platform
from proxyplane.storage.models import LegacyListUpdate, Service
from tests.adapters.legacy.support import JSON, auth, buy, rotating_product, static_product
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio


async def _service(platform: Platform, number: int) -> Service:
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        return svc


async def _password(platform: Platform, number: int) -> str:
    return services.reveal_password(platform.secrets, await _service(platform, number))


async def test_clients_and_credit(client: httpx.AsyncClient, account: Account) -> None:
    r = await client.get("/api/clients", headers=auth(account))
    assert r.content == f'[{{"id":{account.customer_id},"email":"{account.email}"}}]'.encode()
    r = await client.get("/api/billing/credit", headers=auth(account))
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, b'{"credit":0.00}', JSON)
    await account.credit(123_405)
    assert (await client.get("/api/billing/credit", headers=auth(account))).content == b'{"credit":1234.05}'
    v1 = await client.get("/api/v1/customer/wallet/balance", headers=bearer(await account.key()))
    assert v1.json()["balance_cents"] == 123_405


async def test_services_empty_then_static_and_rotating(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    assert (await client.get("/api/services", headers=auth(account))).content == b"[]"
    await account.credit(10_000)
    pid, product = await static_product(platform)
    made = await buy(client, account, pid)
    number = made["serviceId"]
    svc = await _service(platform, number)
    today = svc.created_at.strftime("%Y-%m-%d")
    due = svc.current_period_end.strftime("%Y-%m-%d") if svc.current_period_end else ""
    listed = await client.get("/api/services", headers=auth(account))
    assert (
        listed.content
        == (
            f'[{{"service_id":{number},"product_name":"{product.name}","nextduedate":"{due}",'
            f'"orderid":{number},"status":"Active"}}]'
        ).encode()
    )
    got = await client.get(f"/api/service/{number}", headers=auth(account))
    assert (got.status_code, got.headers["content-type"]) == (200, JSON)
    assert (
        got.content
        == (
            f'{{"service_id":{number},"orderid":{number},"product_name":"{product.name}","regdate":"{today}",'
            f'"nextduedate":"{due}","status":"Active","billingcycle":"Monthly","username":"{svc.login}",'
            f'"password":"{await _password(platform, number)}","bindedip":"203.0.113.7","product_type":"fpr",'
            f'"ip_count":3,"price":2.50}}'
        ).encode()
    )
    rpid, rproduct = await rotating_product(platform)
    rnum = (await buy(client, account, rpid, setip=None))["serviceId"]
    rsvc = await _service(platform, rnum)
    got = await client.get(f"/api/service/{rnum}", headers=auth(account))
    assert (
        got.content
        == (
            f'{{"service_id":{rnum},"orderid":{rnum},"product_name":"{rproduct.name}","regdate":"{today}",'
            f'"nextduedate":"{due}","status":"Active","billingcycle":"Monthly","username":"{rsvc.login}",'
            f'"password":"{await _password(platform, rnum)}","product_type":"ppr","price":4.00}}'
        ).encode()
    )
    ids = [s["service_id"] for s in (await client.get("/api/services", headers=auth(account))).json()]
    assert ids == [number, rnum]


async def test_status_mapping_follows_v1_cancel(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(10_000)
    pid, _ = await static_product(platform)
    number = (await buy(client, account, pid))["serviceId"]
    svc = await _service(platform, number)
    key = await account.key()
    r = await client.post(f"/api/v1/customer/services/{svc.service_id}/cancel", headers=bearer(key))
    assert r.status_code == 200, r.text
    assert (await client.get(f"/api/service/{number}", headers=auth(account))).json()["status"] == "Cancelled"
    # an active service past its term reads as Terminated (v1: expired)
    number2 = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    async with platform.db.unit_of_work() as uow:
        s2 = await services.get_by_number(uow.session, number2)
        assert s2 is not None
        s2.current_period_end = utcnow() - timedelta(minutes=1)
        await uow.commit()
    assert (await client.get(f"/api/service/{number2}", headers=auth(account))).json()[
        "status"
    ] == "Terminated"


async def test_service_errors(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    other = await make_account(platform)
    await other.credit(10_000)
    theirs = (await buy(client, other, (await static_product(platform))[0]))["serviceId"]
    for path in (f"/api/service/{theirs}", "/api/service/abc", "/api/service/99999999"):
        r = await client.get(path, headers=auth(account))
        assert (r.status_code, r.content) == (422, b'{"error":"Unprocessable Entity"}')
    for path in (f"/api/service/{theirs}", "/api/service/abc"):
        r = await client.put(path, json={"setip": "1.2.3.4"}, headers=auth(account))
        assert (r.status_code, r.content, r.headers["content-type"]) == (
            400,
            b'{"error":"Unprocessable Entity. ClientID not found"}',
            JSON,
        )


async def test_put_setip_password_and_v1_sees_it(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    svc = await _service(platform, number)
    key = await account.key()
    new_password = "Legacy-Pass.42"
    body = {"setip": "198.51.100.20", "password": base64.b64encode(new_password.encode()).decode()}
    r = await client.put(f"/api/service/{number}", json=body, headers=auth(account, "|"))
    assert (r.status_code, r.headers["content-type"]) == (200, JSON)
    assert r.content == (
        b'{"setip":"IP 198.51.100.20 bound successfully","password":"Password changed successfully"}'
    )
    v1 = (await client.get(f"/api/v1/customer/services/{svc.service_id}", headers=bearer(key))).json()
    assert v1["whitelist_ips"] == ["198.51.100.20"]  # the bound IP replaced the one given at purchase
    assert await _password(platform, number) == new_password
    got = (await client.get(f"/api/service/{number}", headers=auth(account))).json()
    assert (got["bindedip"], got["password"]) == ("198.51.100.20", new_password)
    # an empty body does nothing
    r = await client.put(f"/api/service/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"{}")


@pytest.mark.parametrize("bad", ["1.2.3", "1.2.3.4/24", "::1", "300.1.1.1", 12345, ""])
async def test_put_setip_invalid(
    client: httpx.AsyncClient, platform: Platform, account: Account, bad: object
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    r = await client.put(f"/api/service/{number}", json={"setip": bad}, headers=auth(account))
    assert (r.status_code, r.content) == (422, b'{"error":"Unprocessable Entity. Invalid IPv4 format"}')
    got = (await client.get(f"/api/service/{number}", headers=auth(account))).json()
    assert got["bindedip"] == "203.0.113.7"


@pytest.mark.parametrize(
    "bad", ["%%%not base64", base64.b64encode(b"short").decode(), base64.b64encode(b"has space in").decode()]
)
async def test_put_password_invalid(
    client: httpx.AsyncClient, platform: Platform, account: Account, bad: str
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    before = await _password(platform, number)
    body = {"setip": "198.51.100.99", "password": bad}
    r = await client.put(f"/api/service/{number}", json=body, headers=auth(account))
    assert (r.status_code, r.content) == (422, b'{"error":"Unprocessable Entity"}')
    assert await _password(platform, number) == before  # nothing of the call applied, setip included
    assert (await client.get(f"/api/service/{number}", headers=auth(account))).json()[
        "bindedip"
    ] == "203.0.113.7"


async def test_update_list_throttled_429(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform))[0]))["serviceId"]
    svc = await _service(platform, number)
    last = utcnow().replace(microsecond=0) - timedelta(minutes=10)
    async with platform.db.unit_of_work() as uow:
        uow.session.add(LegacyListUpdate(service_id=svc.service_id, updated_at=last))
        await uow.commit()
    nxt = last + timedelta(hours=1)
    r = await client.put(f"/api/service/{number}", json={"update_list": "true"}, headers=auth(account))
    assert r.status_code == 429
    assert (
        r.content
        == (
            '{"error":"Too Many Attempts (updateList). Next update possible: '
            + nxt.strftime("%Y-%m-%d %H:%M:%S")
            + '"}'
        ).encode()
    )
    assert r.headers["content-type"] == JSON
    assert r.headers["x-ratelimit-limit"] == "1"
    assert r.headers["x-ratelimit-remaining"] == "0"
    assert r.headers["x-ratelimit-reset"] == str(int(nxt.timestamp()))
    assert 3000 <= int(r.headers["retry-after"]) <= 3000 + 10
    # "false" does not update anything
    r = await client.put(f"/api/service/{number}", json={"update_list": "false"}, headers=auth(account))
    assert (r.status_code, r.content) == (200, b"{}")
