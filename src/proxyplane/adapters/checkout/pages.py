"""The built-in test processor's checkout page: the payer confirms or declines; the decision is sent
as a signed callback through the same verification path an external processor's would take. What the page
shows is the registered read `checkout_view` (domains/wallet/checkout_page.py, the `checkout` door)."""

from __future__ import annotations

import html

from fastapi import APIRouter, Form
from fastapi.responses import HTMLResponse

from proxyplane.core.errors import NotFound
from proxyplane.core.product_names import product_name
from proxyplane.domains.wallet.checkout_page import (
    CHECKOUT_VIEW,
    CheckoutOrder,
    CheckoutPageQuery,
    CheckoutView,
)
from proxyplane.ops import Caller, invoke
from proxyplane.payment_events import process_event
from proxyplane.platform import Platform
from proxyplane.processors.testpay import TestProcessor

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#1b1f24}}
.card{{border:1px solid #d0d7de;border-radius:8px;padding:1.5rem}}button{{font-size:1rem;padding:.6rem 1.2rem;
margin-right:.5rem;border-radius:6px;border:1px solid #888;cursor:pointer}}
.pay{{background:#1f883d;color:#fff}}
.muted{{color:#57606a;font-size:.9rem}}</style></head><body><div class="card">{body}</div></body></html>"""


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(PAGE.format(title=html.escape(title), body=body), status_code=status)


def _dollars(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def _what(deposit: CheckoutView, order: CheckoutOrder | None) -> str:
    """What this checkout pays, in the payer's words: an order's remainder or a wallet top-up."""
    amount = _dollars(deposit.amount_cents)
    if order is None:
        return f"Wallet top-up of <strong>{amount}</strong>"
    ips = order.ips
    total = order.wallet_paid_cents + deposit.amount_cents
    wallet = (
        f"; {_dollars(order.wallet_paid_cents)} of its {_dollars(total)} already paid from your wallet"
        if order.wallet_paid_cents
        else ""
    )
    return (
        f"Order #{order.number} ({html.escape(product_name(order.product_kind))}, {ips} IPs): "
        f"<strong>{amount}</strong> due{wallet}"
    )


def _back(order: CheckoutOrder | None) -> str:
    if order is None:
        return '<p><a href="/wallet">Back to your wallet</a></p>'
    return f'<p><a href="/services/{order.service_id}">Back to order #{order.number}</a></p>'


def checkout_router(platform: Platform) -> APIRouter:
    router = APIRouter(prefix="/checkout/test", include_in_schema=False)

    def processor() -> TestProcessor | None:
        proc = platform.processor()
        return proc if isinstance(proc, TestProcessor) else None

    async def load(deposit_id: str, token: str) -> CheckoutView | None:
        try:
            view: CheckoutView = await invoke(
                platform,
                CHECKOUT_VIEW,
                Caller.anonymous(channel="checkout"),
                CheckoutPageQuery(deposit_id=deposit_id, token=token),
            )
        except NotFound:
            return None
        return view

    @router.get("/{deposit_id}")
    async def page(deposit_id: str, token: str = "") -> HTMLResponse:
        deposit = await load(deposit_id, token)
        if deposit is None:
            return _page("Checkout not found", "<h1>Checkout not found</h1>", 404)
        order = deposit.order
        if deposit.status != "pending":
            return _page(
                "Checkout",
                f"<h1>Payment {html.escape(deposit.status)}</h1><p>{_what(deposit, order)}</p>{_back(order)}",
            )
        tok = html.escape(token)
        return _page(
            "Test checkout",
            (
                f"<h1>Test checkout</h1><p>{_what(deposit, order)} "
                f"by {html.escape(deposit.payment_method)}.</p>"
                '<p class="muted">Built-in test processor: no real money moves.</p>'
                f'<form method="post" action="/checkout/test/{deposit.deposit_id}/decide">'
                f'<input type="hidden" name="token" value="{tok}">'
                '<button class="pay" name="decision" value="paid">Pay</button>'
                '<button name="decision" value="failed">Decline</button></form>'
            ),
        )

    @router.post("/{deposit_id}/decide")
    async def decide(deposit_id: str, token: str = Form(""), decision: str = Form("")) -> HTMLResponse:
        deposit = await load(deposit_id, token)
        proc = processor()
        if deposit is None or proc is None or decision not in ("paid", "failed"):
            return _page("Checkout not found", "<h1>Checkout not found</h1>", 404)
        body, headers = proc.signed_callback(deposit.deposit_id, decision, deposit.amount_cents)
        event = proc.parse_callback(body, headers)
        result = await process_event(platform, event) if event is not None else {"status": "ignored"}
        status = html.escape(str(result.get("status", "")))
        after = await load(deposit_id, token)
        order = after.order if after is not None else deposit.order
        return _page("Checkout", f"<h1>Payment {status}</h1><p>{_what(deposit, order)}</p>{_back(order)}")

    return router
