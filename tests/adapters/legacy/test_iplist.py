"""iplist for the five types and three formats; network status (inactive)."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.domains.services import service as services
from proxyplane.platform import Platform
from proxyplane.storage.models import StockIp
from tests.adapters.legacy.support import JSON, TEXT, auth, buy, rotating_product, static_product
from tests.support import Account, make_account

pytestmark = pytest.mark.anyio
GENERIC = b'{"error":"Unprocessable Entity"}'


async def _static(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> tuple[int, list[str], str, str]:
    await account.credit(10_000)
    number = (await buy(client, account, (await static_product(platform, ips=2))[0]))["serviceId"]
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        ips = [i.address for i in await services.service_ips(uow.session, svc.service_id)]
        return number, ips, svc.login, services.reveal_password(platform.secrets, svc)


async def test_static_lists(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    number, ips, login, password = await _static(client, platform, account)
    a, b = ips
    expected = {
        "http-ip": [f"{a}:3128", f"{b}:3128"],
        "socks-ip": [f"socks5h://{a}:1080", f"socks5h://{b}:1080"],
        "http-auth": [f"{a}:3128@{login}:{password}", f"{b}:3128@{login}:{password}"],  # the original form
    }
    csv = {
        "http-ip": f"{a},3128\r\n{b},3128\r\n",
        "socks-ip": f"{a},1080\r\n{b},1080\r\n",
        "http-auth": f"{a},3128,{login},{password}\r\n{b},3128,{login},{password}\r\n",
    }
    for typel, lines in expected.items():
        r = await client.get(f"/api/iplist/{typel}/txt/{number}", headers=auth(account))
        assert (r.status_code, r.content, r.headers["content-type"]) == (
            200,
            "".join(x + "\r\n" for x in lines).encode(),
            TEXT,
        )
        r = await client.get(f"/api/iplist/{typel}/json/{number}", headers=auth(account))
        body = "[" + ",".join('"' + x.replace("/", "\\/") + '"' for x in lines) + "]"
        assert (r.status_code, r.content, r.headers["content-type"]) == (200, body.encode(), JSON)
        assert r.json() == lines
        r = await client.get(f"/api/iplist/{typel}/csv/{number}", headers=auth(account))
        assert (r.status_code, r.content, r.headers["content-type"]) == (
            200,
            csv[typel].encode(),
            "text/csv; charset=UTF-8",
        )
    for typel in ("ppr-http", "ppr-socks"):
        r = await client.get(f"/api/iplist/{typel}/txt/{number}", headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC)


async def test_rotating_lists(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    await account.credit(10_000)
    number = (await buy(client, account, (await rotating_product(platform))[0], setip=None))["serviceId"]
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        login, password = svc.login, services.reveal_password(platform.secrets, svc)
    r = await client.get(f"/api/iplist/ppr-http/txt/{number}", headers=auth(account))
    assert r.content == f"{login}:{password}@127.0.0.1:8080\r\n".encode()
    r = await client.get(f"/api/iplist/ppr-socks/json/{number}", headers=auth(account))
    assert r.content == f'["socks5h:\\/\\/{login}:{password}@127.0.0.1:1080"]'.encode()
    r = await client.get(f"/api/iplist/ppr-socks/csv/{number}", headers=auth(account))
    assert r.content == f"127.0.0.1,1080,{login},{password}\r\n".encode()
    for typel in ("http-ip", "socks-ip", "http-auth"):
        r = await client.get(f"/api/iplist/{typel}/json/{number}", headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC)


async def test_iplist_errors_and_inactive_service(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    number, _, _, _ = await _static(client, platform, account)
    other = await make_account(platform)
    for path in (
        f"/api/iplist/http/txt/{number}",
        f"/api/iplist/http-ip/xml/{number}",
        "/api/iplist/http-ip/txt/abc",
        "/api/iplist/http-ip/txt/99999999",
    ):
        r = await client.get(path, headers=auth(account))
        assert (r.status_code, r.content) == (422, GENERIC), path
    r = await client.get(f"/api/iplist/http-ip/txt/{number}", headers=auth(other))
    assert (r.status_code, r.content) == (422, GENERIC)
    async with platform.db.unit_of_work() as uow:
        svc = await services.get_by_number(uow.session, number)
        assert svc is not None
        await services.cancel(uow.session, svc)
        await uow.commit()
    r = await client.get(f"/api/iplist/http-ip/json/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"[]")
    r = await client.get(f"/api/iplist/http-ip/txt/{number}", headers=auth(account))
    assert (r.status_code, r.content) == (200, b"")


async def test_networkstatus_inactive(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    number, ips, _, _ = await _static(client, platform, account)
    r = await client.get(f"/api/networkstatus/inactive/{number}", headers=auth(account))
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, b"[]", JSON)
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockIp).where(StockIp.address == ips[1]).values(retired_at=utcnow())
        )
        await uow.commit()
    r = await client.get(f"/api/networkstatus/inactive/{number}", headers=auth(account))
    assert r.content == f'["{ips[1]}"]'.encode()
    other = await make_account(platform)
    for path in (f"/api/networkstatus/inactive/{number}", "/api/networkstatus/inactive/x"):
        r = await client.get(path, headers=auth(other))
        assert (r.status_code, r.content) == (400, b'{"error":"Unprocessable Entity. ClientID not found"}')
