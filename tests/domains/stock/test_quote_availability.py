"""The quote's and the countries listing's availability follow the stock exactly (issue 15, O(1) reads):
after an order, its cancellation, a retirement, an import and a re-import of retired IPs, the quote of
more IPs than there are shows the exact free count (and its insufficient_stock error), the listing the
same number, and an order of exactly that many succeeds while one more is refused."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.stock import bulk
from proxyplane.domains.stock import service as stock
from proxyplane.platform import Platform
from tests.adapters.rest.test_order import ORDER, body
from tests.support import Account, bearer

from .support import fresh_stock, unique_loopback

pytestmark = pytest.mark.anyio
QUOTE, COUNTRIES = "/api/v1/billing/composite/quote", "/api/v1/billing/countries"
FIELDS = ("product_kind", "period_months", "segments", "geo_source")


async def _free(client: httpx.AsyncClient) -> int:
    """PH's free datacenter IPs as a quote of 500 sees them, checked against the countries listing."""
    q = await client.post(QUOTE, json={k: v for k, v in body("PH", 500).items() if k in FIELDS})
    assert q.status_code == 200, q.text
    seen = q.json()["segments"][0]["available_ips"]
    assert [e["available"] for e in q.json()["errors"] if e["error"] == "insufficient_stock"] == [seen]
    listing = (await client.get(COUNTRIES, params={"product_kind": "proxy_datacenter"})).json()["countries"]
    assert {c["code"]: c["available_ips"] for c in listing}.get("PH", 0) == seen
    return int(seen)


async def test_quote_availability_after_orders_cancellations_retirement_and_imports(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    await account.credit(1_000_000)
    addresses = await fresh_stock(platform, "proxy_datacenter", "PH", 12, capacity=1)
    assert await _free(client) == 12
    r = await client.post(ORDER, json=body("PH", 8), headers=bearer(key))
    assert r.status_code == 201, r.text
    assert await _free(client) == 4
    r = await client.post(
        f"/api/v1/customer/services/{r.json()['service']['service_id']}/cancel", headers=bearer(key)
    )
    assert r.status_code == 200, r.text
    assert await _free(client) == 12

    async with platform.db.unit_of_work() as uow:
        assert await stock.retire_ips(uow.session, addresses[:3]) == 3
        await uow.commit()
    assert await _free(client) == 9
    fresh = [unique_loopback() for _ in range(5)]
    async with platform.db.unit_of_work() as uow:  # 5 new IPs and the 3 retired ones again
        lines = (f"{a},PH,PH" for a in [*fresh, *addresses[:3]])
        await bulk.import_rows(uow.session, "proxy_datacenter", bulk.file_rows(lines), capacity=1)
        await uow.commit()
    free = await _free(client)
    assert free == 17
    r = await client.post(ORDER, json=body("PH", free + 1), headers=bearer(key))
    assert r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock", r.text
    r = await client.post(ORDER, json=body("PH", free), headers=bearer(key))
    assert r.status_code == 201, r.text
    assert await _free(client) == 0
