"""Sub-user operations over REST (issue 18): create (password once), list, get, update, rotate, delete,
whitelist entries on the service's slots; scopes; 404 for another customer's service or sub-user; clear
409/422 errors; logins unique across services and sub-users both ways."""

from __future__ import annotations

import secrets
from datetime import datetime

import httpx
import pytest
from sqlalchemy import select

from proxyplane.core.scopes import Scope
from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.platform import Platform
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.domains.subusers.support import make_service, own_pool
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


async def test_lifecycle_and_ownership(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pool = await own_pool(platform, ["US"])  # the countries are checked against the service's pool
    svc = await make_service(
        platform, account, parameters={"plan": "bandwidth", "exit_pool": pool}, max_connections=50
    )
    base, h = f"{API}/{svc.service_id}/subusers", bearer(await account.key())

    r = await client.post(
        base, json={"traffic_limit_bytes": 1000, "max_connections": 5, "countries": ["us"]}, headers=h
    )
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["password_revealed"] and len(made["password"]) >= 12 and made["login"].startswith("su")
    assert (made["countries"], made["max_connections"], made["enabled"]) == (["US"], 5, True)
    one = f"{base}/{made['subuser_id']}"
    got = (await client.get(one, headers=h)).json()
    assert got["password"] != made["password"] and not got["password_revealed"]
    chosen = f"team_{secrets.token_hex(4)}"  # logins are unique across the store the suite shares
    named = await client.post(base, json={"login": chosen}, headers=h)
    assert named.status_code == 201 and named.json()["login"] == chosen
    listed = (await client.get(base, headers=h)).json()
    assert [i["subuser_id"] for i in listed["items"]] == [made["subuser_id"], named.json()["subuser_id"]]

    # usage reaches the limit; raising the limit lets it through again, reset_usage zeroes it
    async with platform.db.unit_of_work() as uow:
        found = select(ServiceSubuser.id).where(ServiceSubuser.login == made["login"])
        pk = (await uow.session.execute(found)).scalar_one()
        minute = datetime.fromisoformat(made["created_at"]).replace(second=0, microsecond=0)
        row = {
            "subuser_pk": pk,
            "minute": minute,
            "host": "a.example",
            "requests": 3,
            "connections": 1,
            "bytes_up": 600,
            "bytes_down": 600,
            "errors": 0,
        }
        await apply_usage(uow.session, [row], [])
        await uow.commit()
    got = (await client.get(one, headers=h)).json()
    assert (got["used_bytes"], got["limit_reached"], got["usage_pct"]) == (1200, True, 100)
    raised = (await client.patch(one, json={"traffic_limit_bytes": 10_000}, headers=h)).json()
    assert (raised["limit_reached"], raised["usage_pct"]) == (False, 0)
    lowered = (
        await client.patch(one, json={"traffic_limit_bytes": 1400, "enabled": False}, headers=h)
    ).json()
    assert (lowered["limit_reached"], lowered["usage_pct"], lowered["enabled"]) == (False, 80, False)
    reset = (await client.patch(one, json={"reset_usage": True, "countries": None}, headers=h)).json()
    assert (reset["used_bytes"], reset["usage_pct"], reset["countries"]) == (0, 0, None)

    rotated = (await client.post(f"{one}/password", headers=h)).json()
    assert rotated["password_revealed"] and rotated["password"] != made["password"]

    # another customer: 404 for the service and for the sub-user through its own service
    other = await make_account(platform)
    oh = bearer(await other.key())
    assert (await client.get(base, headers=oh)).status_code == 404
    assert (await client.get(one, headers=oh)).status_code == 404
    other_svc = await make_service(platform, other)
    assert (
        await client.get(f"{API}/{other_svc.service_id}/subusers/{made['subuser_id']}", headers=oh)
    ).status_code == 404

    # scopes: services:read reads, cannot write
    ro = bearer(await account.key({Scope.services_read}))
    assert (await client.get(base, headers=ro)).status_code == 200
    assert (await client.post(base, json={}, headers=ro)).status_code == 403

    assert (await client.delete(one, headers=h)).status_code == 204
    assert (await client.get(one, headers=h)).status_code == 404


async def test_clear_errors(client: httpx.AsyncClient, platform: Platform, account: Account) -> None:
    rot = await make_service(platform, account, parameters={"plan": "bandwidth"}, max_connections=10)
    static = await make_service(platform, account, kind="proxy_datacenter")
    h = bearer(await account.key())
    base = f"{API}/{rot.service_id}/subusers"

    async def create(body: dict, url: str = base) -> httpx.Response:
        return await client.post(url, json=body, headers=h)

    taken = await create({"login": static.login})
    assert taken.status_code == 409 and "taken" in taken.json()["detail"]["message"]
    assert (await create({"login": "pp0123456789"})).status_code == 422
    conns = await create({"max_connections": 11})
    assert conns.status_code == 422 and "above the service's 10" in conns.json()["detail"]["message"]
    unit = await create({"traffic_limit_requests": 5})
    assert unit.status_code == 422 and "bytes" in unit.json()["detail"]["message"]
    countries = await create({"countries": ["DE"]}, f"{API}/{static.service_id}/subusers")
    assert countries.status_code == 409 and "rotating" in countries.json()["detail"]["message"]
    assert (await create({"countries": ["DEU"]})).status_code == 422

    # a service's login cannot become a sub-user's
    sub = (await create({"login": "crew_one"})).json()
    r = await client.put(f"{API}/{static.service_id}/proxy/auth", json={"login": "crew_one"}, headers=h)
    assert r.status_code == 409, r.text
    assert (await create({"login": "crew_one"})).status_code == 409
    assert sub["login"] == "crew_one"


async def test_whitelist_uses_the_services_slots(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await make_service(platform, account, kind="proxy_datacenter")
    h = bearer(await account.key())
    service_wl = f"{API}/{svc.service_id}/proxy/whitelist"
    limit = (await client.get(service_wl, headers=h)).json()["limit"]
    assert limit >= 2
    sub = (await client.post(f"{API}/{svc.service_id}/subusers", json={}, headers=h)).json()
    wl = f"{API}/{svc.service_id}/subusers/{sub['subuser_id']}/whitelist"
    for i in range(limit - 1):
        r = await client.post(wl, json={"ip": f"127.0.1.{i + 1}"}, headers=h)
        assert r.status_code == 200, r.text
    assert (await client.post(wl, json={"ip": "127.0.1.1"}, headers=h)).status_code == 200  # present: no-op
    assert (await client.post(service_wl, json={"ip": "127.0.2.1"}, headers=h)).status_code == 200
    full = await client.post(wl, json={"ip": "127.0.3.1"}, headers=h)
    assert full.status_code == 409 and "slots are full" in full.json()["detail"]["message"]
    assert (await client.post(service_wl, json={"ip": "127.0.2.2"}, headers=h)).status_code == 409
    assert (await client.post(wl, json={"ip": "10.0.0.0/8"}, headers=h)).status_code == 422
    left = await client.delete(f"{wl}?ip=127.0.1.1", headers=h)
    assert left.status_code == 200 and "127.0.1.1" not in left.json()["whitelist"]
    assert (await client.post(service_wl, json={"ip": "127.0.2.2"}, headers=h)).status_code == 200
