"""A sub-user's allowed countries are checked against its service's exit pool when set (issue 18): a
country the pool has no exit in is refused with 422 in the documented error shape, naming it (message,
`field`, `unknown_countries`); the sub-user is left unchanged; countries of the pool are accepted."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.platform import Platform
from tests.domains.subusers.support import make_service, own_pool
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"


async def test_countries_outside_the_pool_are_refused(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pool = await own_pool(platform, ["US", "DE"])
    svc = await make_service(platform, account, parameters={"exit_pool": pool})
    base, h = f"{API}/{svc.service_id}/subusers", bearer(await account.key())

    r = await client.post(base, json={"countries": ["us", "fr"]}, headers=h)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert (detail["error"], detail["field"], detail["unknown_countries"]) == (
        "validation_error",
        "countries",
        ["FR"],
    )
    assert "FR" in detail["message"] and "DE, US" in detail["message"]
    assert (await client.get(base, headers=h)).json()["items"] == []

    made = await client.post(base, json={"countries": ["us", "de"]}, headers=h)
    assert made.status_code == 201 and made.json()["countries"] == ["DE", "US"]
    one = f"{base}/{made.json()['subuser_id']}"
    r = await client.patch(one, json={"countries": ["de", "jp", "xx"]}, headers=h)
    assert r.status_code == 422 and r.json()["detail"]["unknown_countries"] == ["JP", "XX"]
    assert (await client.get(one, headers=h)).json()["countries"] == ["DE", "US"]
    r = await client.patch(one, json={"countries": ["de"]}, headers=h)
    assert r.status_code == 200 and r.json()["countries"] == ["DE"]
    r = await client.patch(one, json={"countries": None}, headers=h)  # any country again
    assert r.status_code == 200 and r.json()["countries"] is None
