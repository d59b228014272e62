"""Issue 36: static IPs quoted and bought per city or region, from stock the geo data places (a test .mmdb
located the rows): availability per place, a refusal naming the place with the cities that have IPs, the
order taking only IPs of its places (a country segment beside them leaves the city's IPs to the city),
the service's segments and invoice naming the place, nothing charged when the place runs short."""

from __future__ import annotations

import random
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import delete, insert, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import GeoReader
from proxyplane.platform import Platform
from proxyplane.storage.models import IpGeo, StockIp
from tests.domains.geo.mmdb import write
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
QUOTE = "/api/v1/billing/composite/quote"
ORDER = "/api/v1/billing/composite/order"


def order(segments: list[dict[str, Any]], kind: str = "proxy_personal") -> dict[str, Any]:
    return {"product_kind": kind, "period_months": 1, "segments": segments, "geo_source": "maxmind",
            "whitelist_ips": ["127.0.0.9"], "use_balance": True, "idempotency_key": uuid.uuid4().hex}


def quote_of(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in ("product_kind", "period_months", "segments", "geo_source")}


async def balance(client: httpx.AsyncClient, key: str) -> int:
    return (await client.get("/api/v1/customer/wallet/balance", headers=bearer(key))).json()["balance_cents"]


@pytest.fixture
async def placed_stock(platform: Platform, tmp_path):
    """6 dedicated IPs in city Alpha (region Bavaria-tag), 4 in Beta (region Saxony-tag), and 3 the geo
    data places nowhere, all in stock country DE."""
    tag = uuid.uuid4().hex[:6]
    base = f"127.{random.choice([*range(40, 200), *range(201, 250)])}.{random.randrange(0, 250)}"
    names = {"alpha": f"Alpha {tag}", "beta": f"Beta {tag}", "bavaria": f"Bavaria {tag}",
             "saxony": f"Saxony {tag}"}
    city, asn = write(tmp_path, [
        (f"{base}.0/29", "DE", names["bavaria"], "BY", names["alpha"], 64496, "Example Net"),
        (f"{base}.8/29", "DE", names["saxony"], "SN", names["beta"], 64497, "Other Net"),
    ])
    alpha = {f"{base}.{n}" for n in range(2, 8)}
    beta = {f"{base}.{n}" for n in range(8, 12)}
    nowhere = {f"{base}.{n}" for n in range(20, 23)}
    addresses = sorted(alpha | beta | nowhere)
    async with platform.db.unit_of_work(write=True) as uow:
        for address in addresses:
            await uow.session.execute(insert(StockIp).values(
                address=address, product_kind="proxy_personal", country_maxmind="DE", country_ripe="DE",
                capacity=1, assigned_count=0))
        await geo.locate(uow.session, addresses, {"maxmind": GeoReader(city, asn)})
        await uow.commit()
    yield {"tag": tag, "names": names, "alpha": alpha, "beta": beta}
    async with platform.db.unit_of_work(write=True) as uow:
        await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(addresses)))
        await uow.session.execute(update(StockIp).where(StockIp.address.in_(addresses))  # services hold some
                                  .values(retired_at=utcnow()))
        await uow.commit()


async def test_quote_per_city_and_region(client: httpx.AsyncClient, placed_stock) -> None:
    tag, names = placed_stock["tag"], placed_stock["names"]
    r = await client.post(QUOTE, json=quote_of(order([
        {"country": "de", "count": 3, "city": names["alpha"]},
        {"country": "DE", "count": 2, "region": f"saxony_{tag}"},
        {"country": "DE", "count": 1, "city": f"ALPHA{tag}"},  # the same city spelled otherwise: merged
    ])))
    assert r.status_code == 200, r.text
    out = r.json()
    got = [(s["country"], s["region"], s["city"], s["count"], s["available_ips"]) for s in out["segments"]]
    assert got == [("DE", None, f"alpha{tag}", 4, 6), ("DE", f"saxony{tag}", None, 2, 4)]
    assert out["errors"] == [] and out["ip_count"] == 6
    assert out["total_cents"] == sum(s["total_cents"] for s in out["segments"])

    short = (await client.post(QUOTE, json=quote_of(order([
        {"country": "DE", "count": 5, "region": names["saxony"], "city": names["beta"]},
        {"country": "DE", "count": 1, "city": "Atlantis"},
        {"country": "DE", "count": 1, "region": names["bavaria"], "city": names["beta"]},
    ])))).json()
    errors = {(e["region"], e["city"]): e for e in short["errors"]}
    beta = errors[(f"saxony{tag}", f"beta{tag}")]
    assert (beta["error"], beta["requested"], beta["available"]) == ("insufficient_stock", 5, 4)
    assert beta["region"] == f"saxony{tag}" and f"city 'beta{tag}'" in beta["message"]
    nowhere = errors[(None, "atlantis")]
    assert nowhere["available"] == 0 and "city 'atlantis'" in nowhere["message"]
    assert f"alpha{tag}" in nowhere["message"] and f"beta{tag}" in nowhere["message"]  # what DE has
    wrong = errors[(f"bavaria{tag}", f"beta{tag}")]  # Beta lies in Saxony: nothing there
    assert wrong["available"] == 0 and f"alpha{tag}" in wrong["message"]  # Bavaria's cities named
    assert f"beta{tag}" not in wrong["message"].split(":")[-1]
    assert len(short["errors"]) == 3 and short["segments"][2]["available_ips"] == 0


async def test_quote_refuses_bad_places(client: httpx.AsyncClient) -> None:
    blank = order([{"country": "DE", "count": 1, "city": "!!"}])
    r = await client.post(QUOTE, json=quote_of(blank))
    assert r.status_code == 422 and "names no place" in r.json()["detail"]["message"]
    ipv6 = order([{"country": "DE", "count": 1, "city": f"Nowhere {uuid.uuid4().hex}"}], kind="proxy_ipv6")
    r = await client.post(QUOTE, json=quote_of(ipv6))  # subnets by their prefix's place: none there
    assert r.status_code == 200 and r.json()["errors"][0]["available"] == 0
    assert "no proxy_ipv6 IPs available in DE, city" in r.json()["errors"][0]["message"]


async def test_order_takes_ips_of_its_places(
    client: httpx.AsyncClient, platform: Platform, account: Account, placed_stock
) -> None:
    tag, names = placed_stock["tag"], placed_stock["names"]
    key = await account.key()
    await account.credit(100_000)
    b = order([
        {"country": "DE", "count": 4, "city": names["alpha"]},
        {"country": "DE", "count": 2, "region": names["saxony"]},
    ])
    quoted = (await client.post(QUOTE, json=quote_of(b))).json()
    r = await client.post(ORDER, json=b, headers=bearer(key))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["total_cents"] == quoted["total_cents"]
    svc = out["service"]
    ips = {i["ip"] for i in svc["ips"]}
    assert len(ips) == 6 and len(ips & placed_stock["alpha"]) == 4 and len(ips & placed_stock["beta"]) == 2
    assert svc["segments"] == [
        {"country": "DE", "count": 4, "region": None, "city": f"alpha{tag}"},
        {"country": "DE", "count": 2, "region": f"saxony{tag}", "city": None},
    ]
    again = (await client.post(QUOTE, json=quote_of(order([
        {"country": "DE", "count": 1, "city": names["alpha"]}])))).json()
    assert again["segments"][0]["available_ips"] == 2  # dedicated: the order took 4 of the 6
    invoices = (await client.get("/api/v1/customer/invoices", headers=bearer(key))).json()["items"]
    invoice = await client.get(f"/api/v1/customer/invoices/{invoices[0]['invoice_id']}", headers=bearer(key))
    texts = [line["description"] for line in invoice.json()["lines"]]
    assert any(f"city alpha{tag}" in t for t in texts) and any(f"region saxony{tag}" in t for t in texts)

    # IPs added per country keep the bought places in the service's segments
    sid = svc["service_id"]
    await fresh_stock(platform, "proxy_personal", "LU", 1)  # not DE: the city's last two IPs stay free
    added = await client.post(f"/api/v1/billing/services/{sid}/add-ips", headers=bearer(key),
                              json={"segments": [{"country": "LU", "count": 1}], "idempotency_key": "a1"})
    assert added.status_code == 200, added.text
    now = (await client.get(f"/api/v1/customer/services/{sid}", headers=bearer(key))).json()
    assert now["segments"][:2] == svc["segments"] and now["segments"][2] == {
        "country": "LU", "count": 1, "region": None, "city": None}

    # a country segment beside a city: the city's two IPs stay the city's, whatever else DE has
    mixed = order([{"country": "DE", "count": 1}, {"country": "DE", "count": 2, "city": names["alpha"]}])
    r = await client.post(ORDER, json=mixed, headers=bearer(key))
    assert r.status_code == 201, r.text
    got = {i["ip"] for i in r.json()["service"]["ips"]}
    assert len(got) == 3 and len(got & placed_stock["alpha"]) >= 2

    before = await balance(client, key)
    r = await client.post(ORDER, json=order([{"country": "DE", "count": 1, "city": names["alpha"]}]),
                          headers=bearer(key))
    assert r.status_code == 422 and r.json()["detail"]["error"] == "insufficient_stock", r.text
    assert f"city 'alpha{tag}'" in r.json()["detail"]["message"]
    assert await balance(client, key) == before  # nothing charged


async def test_countries_within_a_city_or_region(client: httpx.AsyncClient, placed_stock) -> None:
    tag, names = placed_stock["tag"], placed_stock["names"]
    url = "/api/v1/billing/countries"
    r = await client.get(url, params={"product_kind": "proxy_personal", "city": names["alpha"]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["region"], out["city"]) == (None, f"alpha{tag}")
    assert [(c["code"], c["available_ips"]) for c in out["countries"]] == [("DE", 6)]
    both = (await client.get(url, params={"product_kind": "proxy_personal", "region": f"SAXONY {tag}",
                                          "city": f"beta-{tag}"})).json()
    assert [(c["code"], c["available_ips"]) for c in both["countries"]] == [("DE", 4)]
    wrong = (await client.get(url, params={"product_kind": "proxy_personal", "region": names["bavaria"],
                                           "city": names["beta"]})).json()
    assert wrong["countries"] == []  # Beta is not in Bavaria
    whole = (await client.get(url, params={"product_kind": "proxy_personal"})).json()
    de = next(c for c in whole["countries"] if c["code"] == "DE")
    assert de["available_ips"] >= 13 and whole["city"] is None  # the country: placed or not
    r = await client.get(url, params={"product_kind": "proxy_ipv6", "city": f"Alpha {tag}"})
    assert r.status_code == 200 and r.json()["countries"] == []  # no prefix lies there
    r = await client.get(url, params={"city": "--"})
    assert r.status_code == 422 and r.json()["detail"]["field"] == "city"
