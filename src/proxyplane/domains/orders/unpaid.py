"""Orders waiting for their remainder (issue 22.1): a composite order paid partly from the wallet stays
`pending` with a processor checkout for `amount_due_cents`. This read lists them with what a customer
needs to finish or let go: the amount due, the checkout ("pay now") link, and when an unpaid order is
cancelled (its checkout opened + PROXYPLANE_CHECKOUT_TTL_MINUTES; the renewal job's next pass then
returns the reserved IPs to stock and refunds the wallet part, domains/orders/expiry.py)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import select

from proxyplane.core.clock import as_utc
from proxyplane.core.product_names import product_name
from proxyplane.core.scopes import Scope
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.ops import Context, Operation, register
from proxyplane.storage.models import Deposit, Service


class UnpaidOrder(BaseModel):
    service_id: uuid.UUID
    service_number: int
    product_kind: str
    product_name: str = Field(description="display name of the product kind")
    ip_count: int = Field(description="IPs reserved for the order until it is paid or cancelled")
    period_price_cents: int
    wallet_paid_cents: int = Field(description="already taken from the wallet; refunded if unpaid")
    amount_due_cents: int = Field(description="still to pay at checkout_url")
    checkout_url: str = Field(description="the processor checkout that pays the amount due")
    deposit_id: uuid.UUID
    opened_at: datetime = Field(description="when the checkout was opened")
    cancel_after: datetime = Field(
        description="unpaid after this, the order is cancelled at the next renewal pass: the reserved IPs "
        "go back to stock and wallet_paid_cents is refunded to the wallet"
    )


class UnpaidOrders(BaseModel):
    items: list[UnpaidOrder] = Field(description="oldest first")


async def list_unpaid_orders(ctx: Context, _: None) -> UnpaidOrders:
    ttl = RenewalPolicy.from_env().checkout_ttl
    rows = await ctx.session.execute(
        select(Service, Deposit)
        .join(Deposit, Deposit.id == Service.deposit_id)
        .where(
            Service.customer_id == ctx.customer_id,
            Service.status == "pending",
            Deposit.status == "pending",
        )
        .order_by(Deposit.created_at, Service.number)
    )
    items = []
    for svc, deposit in rows.tuples():
        opened = as_utc(deposit.created_at)
        items.append(
            UnpaidOrder(
                service_id=svc.service_id,
                service_number=svc.number,
                product_kind=svc.product_kind,
                product_name=product_name(svc.product_kind),
                ip_count=sum(int(s.get("count", 0)) for s in svc.segments or []),
                period_price_cents=svc.period_price_cents,
                wallet_paid_cents=svc.wallet_paid_cents,
                amount_due_cents=svc.amount_due_cents,
                checkout_url=deposit.checkout_url,
                deposit_id=deposit.id,
                opened_at=opened,
                cancel_after=opened + ttl,
            )
        )
    return UnpaidOrders(items=items)


UNPAID = Operation(
    name="list_unpaid_orders",
    summary="Orders waiting for payment of their remainder: amount due, checkout link, and when an "
    "unpaid one is cancelled (IPs released, wallet part refunded).",
    method="GET",
    path="/customer/orders/unpaid",
    handler=list_unpaid_orders,
    output=UnpaidOrders,
    scopes=frozenset({Scope.services_read}),
    tags=("billing",),
)
register(UNPAID)
