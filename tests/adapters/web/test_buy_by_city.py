"""Issue 36: the buy page sells statics per region or city: a country's places from list_cities with their
free IPs, the quote panel equal to the REST quote of the placed segments, the order taking IPs of the
places only (the service's segments name them), a pick in another country kept while browsing."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import delete, update

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models import IpGeo
from proxyplane.storage.models.prefixes import StockPrefix
from tests.adapters.rest.test_ipv6_by_city import prefix
from tests.adapters.web.helpers import post_form
from tests.adapters.web.place_stock import COUNTRY, KIND, Placed, add_placed_stock, remove_placed_stock
from tests.adapters.web.test_buy_and_services import buyer
from tests.domains.operators.helpers import run
from tests.support import bearer

pytestmark = pytest.mark.anyio


def available(page: str, field: str) -> int:
    row = re.search(rf'<td class="num">(\d+)</td>\s*<td class="num"><input [^>]*name="{field}"', page)
    assert row, page
    return int(row.group(1))


async def test_buy_per_city_and_region(client: httpx.AsyncClient, platform: Platform, tmp_path: Path) -> None:
    placed = await add_placed_stock(platform, tmp_path)
    try:
        await _run(client, placed)
    finally:
        await remove_placed_stock(platform, placed)


async def _run(client: httpx.AsyncClient, placed: Placed) -> None:
    tag = placed.tag
    bavaria, alpha, saxony = f"p_{COUNTRY}_bavaria{tag}_", f"p_{COUNTRY}_bavaria{tag}_alpha{tag}", \
        f"p_{COUNTRY}_saxony{tag}_"
    _, key = await buyer(client, client._transport.app.state.platform, 100_000)  # type: ignore[attr-defined]
    page = await client.get(f"/buy?product_kind={KIND}&geo_source=maxmind&place_country={COUNTRY.lower()}")
    assert page.status_code == 200, page.text
    assert f"Anywhere in <strong>Bavaria {tag}</strong>" in page.text and f"Beta {tag}" in page.text
    assert available(page.text, bavaria) == 6 and available(page.text, alpha) == 6
    assert available(page.text, saxony) == 4
    assert available(page.text, f"p_{COUNTRY}_saxony{tag}_beta{tag}") == 4

    query = f"product_kind={KIND}&geo_source=maxmind&period_months=3&{alpha}=3&{saxony}=2"
    panel = await client.get(f"/buy/quote?{query}")
    rest = await client.post("/api/v1/billing/composite/quote", json={
        "product_kind": KIND, "period_months": 3, "geo_source": "maxmind", "segments": [
            {"country": COUNTRY, "count": 3, "region": f"bavaria{tag}", "city": f"alpha{tag}"},
            {"country": COUNTRY, "count": 2, "region": f"saxony{tag}"}]})
    assert rest.status_code == 200 and rest.json()["errors"] == [], rest.text
    total = rest.json()["total_cents"]
    assert f"${total // 100:,}.{total % 100:02d}" in panel.text
    assert f"city alpha{tag}" in panel.text and f"region saxony{tag}" in panel.text
    short = await client.get(f"/buy/quote?product_kind={KIND}&p_{COUNTRY}__atlantis=1")
    assert 'class="error"' in short.text and "atlantis" in short.text and f"alpha{tag}" in short.text

    elsewhere = await client.get(f"/buy?product_kind={KIND}&place_country=FR&{alpha}=3")
    assert f'<input type="hidden" name="{alpha}" value="3">' in elsewhere.text  # kept for the order

    r = await post_form(client, "/buy", "/buy", {
        "product_kind": KIND, "geo_source": "maxmind", "period_months": "1", "place_country": COUNTRY,
        alpha: "2", saxony: "1", "whitelist": "127.0.0.5", "use_balance": "1", "payment_method": "card",
        "idempotency_key": f"web-city-{tag}"})
    assert r.status_code == 303, r.text
    sid = r.headers["location"].rsplit("/", 1)[1]
    svc = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    ips = {i["ip"] for i in svc["ips"]}
    assert len(ips) == 3 and len(ips & placed.alpha) == 2 and len(ips & placed.beta) == 1
    assert sorted(svc["segments"], key=str) == sorted([
        {"country": COUNTRY, "count": 2, "region": f"bavaria{tag}", "city": f"alpha{tag}"},
        {"country": COUNTRY, "count": 1, "region": f"saxony{tag}", "city": None}], key=str)
    after = await client.get(f"/buy?product_kind={KIND}&place_country={COUNTRY}")
    assert available(after.text, alpha) == 4  # dedicated: two of Alpha's six are sold


async def test_buy_page_lists_ipv6_places(client: httpx.AsyncClient, platform: Platform) -> None:
    """proxy_ipv6: the places are the prefixes' (list_cities: free /64s of the prefixes placed there)."""
    tag = uuid.uuid4().hex[:6]
    north = await prefix(platform)  # a /56 on sale in IS: 256 /64s
    try:
        await run(platform, "operator_geo_override", address=north, region=f"North {tag}",
                  city=f"Akureyri {tag}")
        await buyer(client, platform, 0)
        page = await client.get("/buy?product_kind=proxy_ipv6&place_country=IS")
        assert page.status_code == 200, page.text
        field = f"p_IS_north{tag}_akureyri{tag}"
        assert available(page.text, field) == 256 and available(page.text, f"p_IS_north{tag}_") == 256
        panel = await client.get(f"/buy/quote?product_kind=proxy_ipv6&period_months=1&{field}=2")
        rest = await client.post("/api/v1/billing/composite/quote", json={
            "product_kind": "proxy_ipv6", "period_months": 1, "segments": [
                {"country": "IS", "count": 2, "region": f"north{tag}", "city": f"akureyri{tag}"}]})
        total = rest.json()["total_cents"]
        assert rest.json()["errors"] == [] and f"${total // 100:,}.{total % 100:02d}" in panel.text
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(delete(IpGeo).where(IpGeo.address == north))
            await uow.session.execute(update(StockPrefix).where(StockPrefix.prefix == north)
                                      .values(retired_at=utcnow()))
            await uow.commit()
