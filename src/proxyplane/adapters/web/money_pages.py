"""Overview, wallet (balance, ledger, top-up) and profile pages (API keys: keys.py)."""

from __future__ import annotations

import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from proxyplane.adapters.web.base import WebRoute, call, form, has_op, redirect, render, require_login
from proxyplane.core.errors import DomainError

router = APIRouter(route_class=WebRoute, include_in_schema=False)
LEDGER_PAGE = 25


def int_param(request: Request, name: str, default: int = 0) -> int:
    try:
        return max(0, int(request.query_params.get(name, str(default))))
    except ValueError:
        return default


def as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


async def unpaid_orders(request: Request) -> Any:
    """Orders waiting for their remainder (none where the orders domain is not installed)."""
    return await call(request, "list_unpaid_orders") if has_op("list_unpaid_orders") else None


def dollars_to_cents(text: str) -> int:
    try:
        amount = Decimal(text.strip().lstrip("$").replace(",", ""))
    except InvalidOperation:
        return -1
    if amount != amount.quantize(Decimal("0.01")):
        return -1
    return int(amount * 100)


@router.get("/overview")
async def overview(request: Request) -> Response:
    await require_login(request)
    profile = await call(request, "get_profile")
    balance = await call(request, "get_balance")
    ledger = await call(request, "get_ledger", {"offset": 0, "limit": 5})
    keys = await call(request, "list_api_keys")
    services = None
    if has_op("list_services"):
        services = await call(request, "list_services", {"offset": 0, "limit": 5})
    return render(
        request,
        "overview.html",
        profile=profile,
        balance=balance,
        ledger=ledger,
        key_count=len(keys.root),
        services=services,
        unpaid=await unpaid_orders(request),
    )


async def _wallet(request: Request, status: int = 200, errors: dict[str, str] | None = None) -> Response:
    offset = int_param(request, "offset")
    balance = await call(request, "get_balance")
    ledger = await call(request, "get_ledger", {"offset": offset, "limit": LEDGER_PAGE})
    methods = await call(request, "list_payment_methods")
    return render(
        request,
        "wallet.html",
        status=status,
        balance=balance,
        ledger=ledger,
        methods=methods,
        unpaid=await unpaid_orders(request),
        idempotency_key=uuid.uuid4().hex,
        errors=errors or {},
    )


@router.get("/wallet")
async def wallet(request: Request) -> Response:
    await require_login(request)
    return await _wallet(request)


@router.post("/wallet/topup")
async def topup(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    cents = dollars_to_cents(str(data.get("amount", "")))
    if cents <= 0:
        return await _wallet(request, 422, {"topup": "Enter an amount in dollars, e.g. 25 or 25.50."})
    try:
        deposit = await call(
            request,
            "init_deposit",
            {
                "amount_cents": cents,
                "payment_method": data.get("payment_method", ""),
                "idempotency_key": data.get("idempotency_key", "") or uuid.uuid4().hex,
            },
        )
    except DomainError as exc:
        return await _wallet(request, exc.http_status, {"topup": exc.message})
    return redirect(request, deposit.checkout_url)


async def _profile(request: Request, status: int = 200, errors: dict[str, str] | None = None) -> Response:
    profile = await call(request, "get_profile")
    return render(request, "profile.html", status=status, profile=profile, errors=errors or {})


@router.get("/profile")
async def profile(request: Request) -> Response:
    await require_login(request)
    return await _profile(request)


@router.post("/profile")
async def update_profile(request: Request) -> Response:
    await require_login(request)
    data = await form(request)
    try:
        fields = ("name", "phone", "billing_company", "billing_address", "billing_vat_id")
        await call(request, "update_profile", {f: str(data.get(f, "")).strip() for f in fields})
    except DomainError as exc:
        section = "billing" if data.get("section") == "billing" else "profile"
        return await _profile(request, exc.http_status, {section: exc.message})
    if data.get("section") == "billing":
        return redirect(request, "/profile#billing", "Billing details saved; your invoices show them.")
    return redirect(request, "/profile", "Profile saved.")
