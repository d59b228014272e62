"""Resend a customer's verification or password-reset email (issue 33), on every operator door: the
same link mail the customer's own "resend" / "forgot password" queues (domains/accounts/recovery.py,
into the email outbox), at most 3 of each an hour per account. The operator never sees the link: the
answer and the audit row say what was queued and to which address."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from proxyplane.core.errors import Conflict, NotFound, RateLimited
from proxyplane.domains.accounts import recovery
from proxyplane.ops import OPERATOR_DOORS, Context, operator_op, register
from proxyplane.storage.models import Customer


class ResendEmail(BaseModel):
    customer_id: int
    kind: Literal["verification", "password_reset"]


async def resend_email(ctx: Context, data: ResendEmail) -> dict[str, Any]:
    customer = await ctx.session.get(Customer, data.customer_id)
    if customer is None:
        raise NotFound(f"no customer {data.customer_id}")
    ctx.audit["target"] = f"customer:{customer.id}"
    if customer.status != "active":
        raise Conflict(f"customer {customer.id} is {customer.status}: no link mail is sent to it")
    if data.kind == "verification":
        if customer.email_verified_at is not None:
            raise Conflict(f"customer {customer.id}'s address is already verified")
        sent = await recovery.send_verification(ctx.session, ctx.platform, customer)
    else:
        sent = await recovery.send_reset(ctx.session, ctx.platform, customer)
    if not sent:
        raise RateLimited(f"3 {data.kind.replace('_', ' ')} emails went to this account in the last hour")
    return {"customer_id": customer.id, "kind": data.kind, "queued_to": customer.email}


RESEND_EMAIL = operator_op(
    "customer_resend_email",
    resend_email,
    ResendEmail,
    permission="customers.email",
    doors=OPERATOR_DOORS,
    reseller="reseller.customers",
    bound_by="customer_id",
)
register(RESEND_EMAIL)
