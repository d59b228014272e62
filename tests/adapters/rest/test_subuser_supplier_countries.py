"""Issue 36: a sub-user's countries on a service drawing from an upstream pool are checked against what
the pool can be asked for, not our stock: any known ISO country is taken (our stock has none of the
supplier's exits), a code that is no country is refused naming it, and a pool with an active supplier whose
template cannot carry {country} refuses any country list naming that supplier (a disabled one does not
count)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.operators.helpers import run
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


async def supplier(platform: Platform, pool: str, template: str, name: str) -> str:
    made = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=9,
                     username="sup", password="sup-pw", template=template, name=name)
    return str(made["upstream_id"])


async def test_countries_against_the_supplier_pool(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pool = f"p{uuid.uuid4().hex[:10]}"
    await supplier(platform, pool, "{user}[-country-{country}][-session-{session}]", "first")
    svc = await make_service(platform, account, parameters={"upstream_pool": pool})
    base, h = f"{API}/{svc.service_id}/subusers", bearer(await account.key())

    # whatever our stock holds (the test's pool is no stock at all), the supplier is asked for them
    made = await client.post(base, json={"countries": ["ar", "AE"]}, headers=h)
    assert made.status_code == 201, made.text
    assert made.json()["countries"] == ["AE", "AR"]
    one = f"{base}/{made.json()['subuser_id']}"
    r = await client.patch(one, json={"countries": ["de", "xx", "zz"]}, headers=h)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert (detail["field"], detail["unknown_countries"]) == ("countries", ["XX", "ZZ"])
    assert "XX, ZZ" in detail["message"] and "upstream pool" in detail["message"]
    assert (await client.get(one, headers=h)).json()["countries"] == ["AE", "AR"]

    blind = await supplier(platform, pool, "{user}[-session-{session}]", "blind")
    r = await client.patch(one, json={"countries": ["de"]}, headers=h)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail["suppliers_without_country"] == [blind] and "blind" in detail["message"]
    assert "{country}" in detail["message"]
    r = await client.patch(one, json={"countries": None}, headers=h)  # any country: nothing to tell
    assert r.status_code == 200 and r.json()["countries"] is None

    await run(platform, "operator_upstream_set", upstream_id=blind, active=False)
    r = await client.patch(one, json={"countries": ["de"]}, headers=h)
    assert r.status_code == 200 and r.json()["countries"] == ["DE"]
