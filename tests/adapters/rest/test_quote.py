"""POST /billing/composite/quote and /billing/composite/auto-plan."""

from typing import Any

import httpx
import pytest

from proxyplane.domains.accounts.service import get_customer, set_partner_discount
from proxyplane.domains.pricing import DEFAULT_PRICEBOOKS, quote_lines
from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
QUOTE = "/api/v1/billing/composite/quote"


def q(segments: list[tuple[str, int]], months: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "product_kind": "proxy_datacenter",
        "period_months": months,
        "segments": [{"country": c, "count": n} for c, n in segments],
        "geo_source": "maxmind",
        **extra,
    }


async def test_quote_prices_segments_with_volume_and_term(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LV", 30)
    await fresh_stock(platform, "proxy_datacenter", "LT", 30)
    r = await client.post(QUOTE, json=q([("LV", 30), ("LT", 25)], months=6))
    assert r.status_code == 200
    out = r.json()
    expected = quote_lines(DEFAULT_PRICEBOOKS["proxy_datacenter"], [("LV", 30), ("LT", 25)], 6)
    assert out["binding"] is False and out["errors"] == []
    assert out["total_cents"] == expected.total_cents == sum(s["total_cents"] for s in out["segments"])
    assert out["monthly_total_cents"] == expected.monthly_cents
    assert out["volume_discount_cents"] == expected.volume_discount_cents > 0
    assert out["term_discount_percent"] == 10
    assert out["retail_total_cents"] is None and out["partner_discount_percent"] is None
    assert out["segments"][0]["retail_monthly_cents"] is None


async def test_unfulfillable_segments_listed_with_200(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LV", 3)
    r = await client.post(QUOTE, json=q([("LV", 10), ("XX", 1)]))
    assert r.status_code == 200
    errors = r.json()["errors"]
    assert {e["country"] for e in errors} >= {"LV", "XX"}
    assert next(e for e in errors if e["country"] == "LV")["available"] == 3


@pytest.mark.parametrize(
    "change",
    [{"period_months": 2}, {"product_kind": "x"}, {"geo_source": "x"}, {"segments": []}, {"extra": 1}],
)
async def test_quote_validation(client: httpx.AsyncClient, change: dict[str, Any]) -> None:
    assert (await client.post(QUOTE, json=q([("US", 1)]) | change)).status_code == 422


async def test_partner_fields_only_for_partner_key(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LV", 20)
    plain = (await client.post(QUOTE, json=q([("LV", 20)]), headers=bearer(await account.key()))).json()
    assert plain["retail_total_cents"] is None
    async with platform.db.unit_of_work() as uow:
        await set_partner_discount(uow.session, await get_customer(uow.session, account.customer_id), 10)
        await uow.commit()
    out = (await client.post(QUOTE, json=q([("LV", 20)]), headers=bearer(await account.key()))).json()
    assert out["partner_discount_percent"] == 10 and out["retail_total_cents"] == plain["total_cents"]
    assert out["total_cents"] + out["partner_discount_cents"] == out["retail_total_cents"]
    bad = await client.post(QUOTE, json=q([("LV", 1)]), headers=bearer("ppk_invalid"))
    assert bad.status_code == 401


async def test_auto_plan_segments_quote_without_errors(client: httpx.AsyncClient, platform: Platform) -> None:
    await fresh_stock(platform, "proxy_personal", "SE", 5)
    await fresh_stock(platform, "proxy_personal", "FI", 5)
    r = await client.post(
        "/api/v1/billing/composite/auto-plan",
        json={
            "total_ips": 7,
            "excluded_countries": ["us", "DE", "GB", "SG", "MY"],
            "product_kind": "proxy_personal",
        },
    )
    assert r.status_code == 200, r.text
    segs = r.json()["segments"]
    assert sum(s["count"] for s in segs) == 7 and not {s["country"] for s in segs} & {"US", "DE"}
    out = (
        await client.post(QUOTE, json={**q([]), "product_kind": "proxy_personal", "segments": segs})
    ).json()
    assert out["errors"] == []
    too_many = await client.post("/api/v1/billing/composite/auto-plan", json={"total_ips": 10**5})
    assert too_many.status_code == 422
