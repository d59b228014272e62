"""The console's catalog and prices page (issue 33): the catalog's products (price, on sale or not) and
each pool's price book (base price per IP, volume tiers, term discounts, order minimums, refresh price);
an operator with catalog.write edits them, and a rotating product's traffic quota, its period and its
per-GB rate (issue 32; a pay-as-you-go product's rate per started unit). Each form runs a console-door
operation (operator_product_set, operator_price_set, operator_price_reset), audited with the value before
and after."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.admin.base import ConsoleRoute, call, form, redirect, render, signed_in
from proxyplane.core.errors import ValidationFailed
from proxyplane.core.units import UNITS, parse_amount

router = APIRouter(route_class=ConsoleRoute)
NUMBERS = ("base_price_cents", "min_order_ips", "min_order_cents", "refresh_price_cents_per_ip")


def cents(text: str, what: str) -> int:
    """Dollars as typed ("12", "12.5", "12.50") in whole cents."""
    try:
        value = round(float(text.replace(",", "").strip()) * 100)
    except ValueError:
        raise ValidationFailed(f"{what}: give an amount in dollars, like 12.50") from None
    if value < 0:
        raise ValidationFailed(f"{what}: must not be negative")
    return value


def pairs(text: str, first: str, second: str) -> list[dict[str, int]]:
    """Lines of two whole numbers ("10 13") as [{first: 10, second: 13}, ...]."""
    out = []
    for n, line in enumerate(text.strip().splitlines(), start=1):
        parts = line.replace(",", " ").split()
        if not parts:
            continue
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValidationFailed(
                f"line {n} of {first.split('_')[0]}s: two whole numbers ({first} {second})"
            )
        out.append({first: int(parts[0]), second: int(parts[1])})
    return out


def metered(data: dict[str, Any]) -> dict[str, Any]:
    """A rotating product's traffic fields (issue 32), those filled in: the quota in decimal GB (1 GB =
    10^9 bytes) or requests, its period, the per-GB (pay as you go: per started unit) rate in cents. The
    operation checks the values (422 naming the field); here only that a number is one."""
    out: dict[str, Any] = {}
    gb = str(data.get("quota_gb", "")).strip()
    if gb:
        try:
            out["quota_bytes"] = parse_amount(gb, "GB")
        except ValueError as exc:
            raise ValidationFailed(
                f"quota_bytes: traffic a period in GB: {exc}", field="quota_bytes"
            ) from None
    for name in ("quota_requests", "gb_price_cents"):
        text = str(data.get(name, "")).strip()
        if text:
            if not text.lstrip("-").isdigit():
                raise ValidationFailed(f"{name}: a whole number", field=name)
            out[name] = int(text)
    period = str(data.get("quota_period", "")).strip()
    if period:
        out["quota_period"] = period
    return out


def gb_text(nbytes: int) -> str:
    """Decimal GB as an operator types them ("10", "1.5")."""
    return f"{nbytes / UNITS['GB']:.3f}".rstrip("0").rstrip(".")


@router.get("/admin/catalog")
async def catalog(request: Request) -> Response:
    await signed_in(request)
    products = await call(request, "operator_product_list", {})
    books = await call(request, "operator_price_show", {})
    return render(request, "catalog.html", products=products, books=books, gb=gb_text)


@router.post("/admin/catalog/products/{product_id}")
async def product_set(request: Request, product_id: uuid.UUID) -> Response:
    await signed_in(request)
    data = await form(request)
    change: dict[str, Any] = {
        "product_id": str(product_id),
        "price_cents": cents(str(data.get("price", "")), "price"),
        "active": data.get("active") == "on",
        **metered(data),
    }
    await call(request, "operator_product_set", change, form_token=str(data.get("form_token", "")))
    return redirect("/admin/catalog?done=product")


@router.post("/admin/catalog/prices/{kind}")
async def price_set(request: Request, kind: str) -> Response:
    await signed_in(request)
    data = await form(request)
    overrides: dict[str, Any] = {}
    for name in NUMBERS:
        text = str(data.get(name, "")).strip()
        if not text.isdigit():
            raise ValidationFailed(f"{name}: a whole number")
        overrides[name] = int(text)
    overrides["volume_tiers"] = pairs(str(data.get("volume_tiers", "")), "min_ips", "unit_price_cents")
    overrides["term_discounts"] = pairs(str(data.get("term_discounts", "")), "months", "percent")
    body = {"kind": kind, "overrides": overrides}
    await call(request, "operator_price_set", body, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/catalog?done=prices+of+{kind}")


@router.post("/admin/catalog/prices/{kind}/reset")
async def price_reset(request: Request, kind: str) -> Response:
    await signed_in(request)
    data = await form(request)
    await call(request, "operator_price_reset", {"kind": kind}, form_token=str(data.get("form_token", "")))
    return redirect(f"/admin/catalog?done=default+prices+of+{kind}")
