"""Buy page: product kind, geo source, countries with live availability (or auto-plan), a country's
regions and cities where the stock has them (issue 36), term, live quote, whitelist IPs, and the order paid
from the wallet with any remainder through the processor checkout."""

from __future__ import annotations

import re
import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, redirect, render, require_login
from proxyplane.adapters.web.buy_places import PLACE_FIELD, place_rows, placed_segments
from proxyplane.core.errors import DomainError
from proxyplane.domains.pricing import PRODUCT_KINDS

router = APIRouter(route_class=WebRoute, include_in_schema=False)
KIND_NAMES = {
    "proxy_datacenter": "Datacenter",
    "proxy_isp": "ISP (static residential)",
    "proxy_personal": "Personal",
    "proxy_ipv6": "IPv6 (a /64 per unit)",
}
GEO_SOURCES = {"maxmind": "MaxMind", "ripe": "RIPE"}
TERMS = [1, 3, 6, 12]
COUNT_FIELD = re.compile(r"^n_([A-Z]{2})$")


def choice(values: dict[str, Any]) -> dict[str, Any]:
    """The buyer's choice from query or form values, normalised; counts from n_<CC> fields."""
    kind = str(values.get("product_kind", PRODUCT_KINDS[0]))
    geo = str(values.get("geo_source", "maxmind"))
    try:
        period = int(str(values.get("period_months", "1")))
    except ValueError:
        period = 1
    segments = []
    for key, raw in values.items():
        match = COUNT_FIELD.match(key)
        if match and str(raw).strip():
            try:
                count = int(str(raw))
            except ValueError:
                continue
            if count > 0:
                segments.append({"country": match.group(1), "count": count})
    segments += placed_segments(values)
    return {"product_kind": kind, "geo_source": geo, "period_months": period, "segments": segments}


async def quote_for(request: Request, picked: dict[str, Any]) -> tuple[Any, str]:
    if not picked["segments"]:
        return None, ""
    try:
        return await call(request, "quote_composite", picked), ""
    except DomainError as exc:
        return None, exc.message


async def _buy(
    request: Request, values: dict[str, Any], status: int = 200, errors: dict[str, str] | None = None
) -> Response:
    picked = choice(values)
    errors = dict(errors or {})
    countries: list[Any] = []
    try:
        pool = {"product_kind": picked["product_kind"], "geo_source": picked["geo_source"]}
        listing = await call(request, "list_countries", pool)
        countries = listing.countries
    except DomainError as exc:
        errors["choice"] = exc.message
    counts = {s["country"]: s["count"] for s in picked["segments"] if "region" not in s and "city" not in s}
    place_country = str(values.get("place_country", "")).upper()
    places = []
    if place_country:
        try:
            listing = await call(request, "list_cities", {**pool, "country": place_country})
            places = place_rows(place_country, listing.cities)
        except DomainError as exc:
            errors["places"] = exc.message
    placed = {k: str(v) for k, v in values.items() if PLACE_FIELD.match(k) and str(v).strip()}
    shown = {row.field for row in places}
    quote, quote_error = await quote_for(request, picked)
    return render(
        request,
        "buy.html",
        status=status,
        picked=picked,
        counts=counts,
        countries=countries,
        place_country=place_country,
        places=places,
        placed=placed,
        placed_hidden={k: v for k, v in placed.items() if k not in shown},
        kinds=KIND_NAMES,
        geo_sources=GEO_SOURCES,
        terms=TERMS,
        quote=quote,
        quote_error=quote_error,
        whitelist=str(values.get("whitelist", "")),
        use_balance=str(values.get("use_balance", "1")) == "1",
        idempotency_key=uuid.uuid4().hex,
        errors=errors,
    )


@router.get("/buy")
async def buy(request: Request) -> Response:
    await require_login(request)
    return await _buy(request, dict(request.query_params))


@router.get("/buy/quote")
async def buy_quote(request: Request) -> Response:
    """The quote panel alone, fetched by the page's script as the choice changes."""
    await require_login(request)
    picked = choice(dict(request.query_params))
    quote, quote_error = await quote_for(request, picked)
    return render(request, "buy_quote.html", quote=quote, quote_error=quote_error, picked=picked)


@router.post("/buy/auto-plan")
async def auto_plan(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    picked = choice(data)
    body: dict[str, Any] = {"product_kind": picked["product_kind"], "geo_source": picked["geo_source"]}
    try:
        body["total_ips"] = int(str(data.get("total_ips", "")))
    except ValueError:
        return await _buy(request, data, 422, {"auto": "Enter how many IPs you want in total."})
    excluded = [c.strip().upper() for c in str(data.get("excluded", "")).split(",") if c.strip()]
    if excluded:
        body["excluded_countries"] = excluded
    try:
        plan = await call(request, "auto_plan", body)
    except DomainError as exc:
        return await _buy(request, data, exc.http_status, {"auto": exc.message})
    values = {k: v for k, v in data.items() if not COUNT_FIELD.match(k) and not PLACE_FIELD.match(k)}
    for seg in plan.segments:
        values[f"n_{seg.country}"] = str(seg.count)
    return await _buy(request, values)


@router.post("/buy")
async def order(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    picked = choice(data)
    whitelist = [ip for ip in re.split(r"[\s,]+", str(data.get("whitelist", ""))) if ip]
    body = {
        **picked,
        "whitelist_ips": whitelist,
        "use_balance": str(data.get("use_balance", "")) == "1",
        "payment_method": str(data.get("payment_method", "card")),
        "idempotency_key": str(data.get("idempotency_key", "")) or uuid.uuid4().hex,
    }
    if not picked["segments"]:
        nothing = "Choose at least one IP in some country, region or city."
        return await _buy(request, data, 422, {"order": nothing})
    try:
        result = await call(request, "order_composite", body)
    except DomainError as exc:
        return await _buy(request, data, exc.http_status, {"order": exc.message})
    if result.checkout_url:
        return redirect(request, result.checkout_url)
    done = f"Order {result.order_id} paid; your proxies are ready."
    return redirect(request, f"/services/{result.service.service_id}", done)
