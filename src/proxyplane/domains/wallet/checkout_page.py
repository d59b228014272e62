"""What the built-in test processor's checkout page shows (adapters/checkout/pages.py): the deposit behind
a page token and the order whose remainder it pays (none: a wallet top-up). A registered read served by the
`checkout` door only; the page token (signed by the test processor) is its authority, not an API key. The
payer's decision is not an operation here: the page sends the processor's signed callback through the same
path an external processor's takes (payment_events.py)."""

from __future__ import annotations

import uuid

from pydantic import BaseModel
from sqlalchemy import select

from proxyplane.core.errors import NotFound
from proxyplane.ops import Auth, Context, Operation, register
from proxyplane.processors.testpay import TestProcessor
from proxyplane.storage.models import Deposit, Service

CHECKOUT = frozenset({"checkout"})


class CheckoutPageQuery(BaseModel):
    deposit_id: str
    token: str = ""


class CheckoutOrder(BaseModel):
    service_id: uuid.UUID
    number: int
    product_kind: str
    ips: int
    wallet_paid_cents: int


class CheckoutView(BaseModel):
    deposit_id: uuid.UUID
    status: str
    amount_cents: int
    payment_method: str
    order: CheckoutOrder | None


async def checkout_view(ctx: Context, q: CheckoutPageQuery) -> CheckoutView:
    proc = ctx.platform.processor()
    try:
        deposit_id = uuid.UUID(q.deposit_id)
    except ValueError:
        raise NotFound("checkout not found") from None
    if not isinstance(proc, TestProcessor) or not proc.check_page_token(deposit_id, q.token):
        raise NotFound("checkout not found")
    deposit = await ctx.session.get(Deposit, deposit_id)
    if deposit is None:
        raise NotFound("checkout not found")
    order = (
        await ctx.session.execute(select(Service).where(Service.deposit_id == deposit.id))
    ).scalar_one_or_none()
    return CheckoutView(
        deposit_id=deposit.id,
        status=deposit.status,
        amount_cents=deposit.amount_cents,
        payment_method=deposit.payment_method,
        order=None
        if order is None
        else CheckoutOrder(
            service_id=order.service_id,
            number=order.number,
            product_kind=order.product_kind,
            ips=sum(int(s.get("count", 0)) for s in order.segments or []),
            wallet_paid_cents=order.wallet_paid_cents,
        ),
    )


CHECKOUT_VIEW = Operation(
    name="checkout_view",
    summary="test checkout: the deposit a page token shows and the order it pays",
    method="GET",
    path="/checkout/test/{deposit_id}",
    handler=checkout_view,
    input=CheckoutPageQuery,
    output=CheckoutView,
    auth=Auth.NONE,
    mcp=False,
    doors=CHECKOUT,
)

register(CHECKOUT_VIEW)
