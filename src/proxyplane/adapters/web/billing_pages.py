"""Invoices (list, PDF download) and the catalog (list, buy a product with its parameters), each action
the REST operation run through `invoke`."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, money, redirect, render, require_login
from proxyplane.adapters.web.money_pages import int_param
from proxyplane.core.errors import DomainError, NotFound

router = APIRouter(route_class=WebRoute, include_in_schema=False)
PAGE = 25
INVOICE_ID = re.compile(r"^[0-9]{1,18}$")


@router.get("/invoices")
async def invoices(request: Request) -> Response:
    await require_login(request)
    page = await call(request, "list_invoices", {"offset": int_param(request, "offset"), "limit": PAGE})
    return render(request, "invoices.html", page=page)


@router.get("/invoices/{invoice_id}.pdf")
async def invoice_pdf(request: Request) -> Response:
    await require_login(request)
    invoice_id = request.path_params["invoice_id"]
    if not INVOICE_ID.match(invoice_id):
        raise NotFound("invoice not found")
    pdf = await call(request, "get_invoice_pdf", {"invoice_id": invoice_id})
    name = re.sub(r"[^A-Za-z0-9._-]", "_", pdf.filename) or f"invoice-{invoice_id}.pdf"
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"}
    return Response(base64.b64decode(pdf.content_base64), media_type="application/pdf", headers=headers)


def parameter_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The product's parameters as form fields: an enum becomes a select, anything else a text box."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in props.items():
        spec = spec if isinstance(spec, dict) else {}
        fields.append(
            {
                "name": name,
                "label": str(spec.get("title") or name.replace("_", " ").capitalize()),
                "choices": [str(v) for v in spec.get("enum") or ()],
                "type": spec.get("type", "string"),
                "required": name in required,
            }
        )
    return fields


async def _catalog(request: Request, status: int = 200, errors: dict[str, str] | None = None) -> Response:
    page = await call(request, "list_catalog", {"offset": int_param(request, "offset"), "limit": 50})
    products = [{"p": p, "fields": parameter_fields(p.parameters_schema)} for p in page.items]
    return render(
        request,
        "catalog.html",
        status=status,
        page=page,
        products=products,
        idempotency_key=uuid.uuid4().hex,
        errors=errors or {},
    )


@router.get("/catalog")
async def catalog(request: Request) -> Response:
    await require_login(request)
    return await _catalog(request)


def parameter_values(fields: list[dict[str, Any]], data: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for f in fields:
        raw = str(data.get(f"param_{f['name']}", "")).strip()
        if not raw:
            continue
        if f["type"] == "integer" and re.fullmatch(r"-?\d+", raw):
            values[f["name"]] = int(raw)
        elif f["type"] == "boolean":
            values[f["name"]] = raw in ("1", "true", "on")
        else:
            values[f["name"]] = raw
    return values


@router.post("/catalog/{product_id}")
async def buy_product(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        product_id = str(uuid.UUID(request.path_params["product_id"]))
    except ValueError:
        raise NotFound("product not found") from None
    section = f"product-{product_id}"
    try:
        product = await call(request, "get_catalog_product", {"product_id": product_id})
        result = await call(
            request,
            "create_service",
            {
                "product_id": product_id,
                "parameters": parameter_values(parameter_fields(product.parameters_schema), data),
                "whitelist_ips": [ip for ip in re.split(r"[\s,]+", str(data.get("whitelist", ""))) if ip],
                "idempotency_key": str(data.get("idempotency_key", "")) or uuid.uuid4().hex,
            },
        )
    except DomainError as exc:
        return await _catalog(request, exc.http_status, {section: exc.message})
    svc = result.service
    if result.created:
        done = f"{product.name}: bought, {money(result.charged_cents)} charged to your wallet."
    else:
        done = f"You already have {product.name}; here it is (nothing charged)."
    return redirect(request, f"/services/{svc.service_id}", done)
