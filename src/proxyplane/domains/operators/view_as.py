"""View the dashboard as the customer (issue 33): an operator opens a short read-only dashboard session of
the customer's, marked with who views (`web_sessions.viewed_by`). The dashboard accepts it only from its
view cookie (never as a customer's own session), runs read operations only, asks none to reveal a secret
(passwords stay masked) and accepts no form. Opening the view is the audited write: who, for which
customer, from where, until when; the link carrying the session's token is printed by the CLI or followed
by the console at once, never written to the audit log."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound
from proxyplane.domains.accounts.web_ops import open_session
from proxyplane.ops import Context, operator_op, register
from proxyplane.storage.models import Customer

VIEW_LIFETIME = timedelta(minutes=30)
VIEW_PATH = "/view-as/"  # the dashboard's door: sets its view cookie from the token, then shows "/"


class ViewAs(BaseModel):
    customer_id: int


async def view_as(ctx: Context, data: ViewAs) -> dict[str, Any]:
    customer = await ctx.session.get(Customer, data.customer_id)
    if customer is None:
        raise NotFound(f"no customer {data.customer_id}")
    if customer.status != "active":
        raise Conflict(f"customer {customer.id} is {customer.status}: the dashboard shows nothing to view")
    who = ctx.caller.actor or ctx.caller.channel
    token = await open_session(
        ctx.session,
        customer.id,
        ctx.caller.client_ip,
        ctx.caller.user_agent,
        viewed_by=who,
        lifetime=VIEW_LIFETIME,
    )
    until = (utcnow() + VIEW_LIFETIME).isoformat()
    shown = {"customer_id": customer.id, "email": customer.email, "viewed_by": who, "expires_at": until}
    ctx.audit.update(target=f"customer:{customer.id}", after={**shown, "read_only": True})
    base = ctx.platform.settings.public_base_url.rstrip("/")
    return {**shown, "view_url": f"{base}{VIEW_PATH}{token}"}


# the link is a credential for half an hour: the host's CLI prints it, the console follows it; never the
# operator API (as operator keys and customers' keys)
VIEW_AS = operator_op(
    "customer_view_as", view_as, ViewAs, permission="customers.view_as", doors=frozenset({"cli", "console"})
)
register(VIEW_AS)
