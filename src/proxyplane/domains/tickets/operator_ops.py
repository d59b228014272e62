"""The operator side of support tickets (`proxyplane admin ticket list|show|reply|close`) as registered
operations served by the "cli" door only (ops.operator_op): never REST or MCP. A reply emits
ticket.replied to the customer, as the service does for every support reply."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.accounts import service as accounts
from proxyplane.domains.operators import resellers
from proxyplane.domains.operators import service as operators
from proxyplane.domains.tickets import service as tickets
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.models import Ticket
from proxyplane.storage.repos import ticket_desk as desk


async def ticket_json(session: Any, t: Ticket, with_messages: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ticket_id": str(t.id),
        "customer_id": t.customer_id,
        "email": await tickets.customer_email(session, t.customer_id),
        "subject": t.subject,
        "status": t.status,
        "service_id": str(t.service_id) if t.service_id else None,
        "created_at": t.created_at.isoformat(),
        "updated_at": t.updated_at.isoformat(),
    }
    if with_messages:
        data["messages"] = [
            {"message_id": m.id, "author": m.author, "body": m.body, "created_at": m.created_at.isoformat()}
            for m in await tickets.messages(session, t)
        ]
    return data


class TicketFilter(BaseModel):
    status: Literal[tickets.STATUSES] | None = None  # type: ignore[valid-type]
    email: str | None = None  # only this customer's tickets
    assigned: str = Field(
        default="",
        max_length=320,
        description="'me': the calling operator's tickets; 'nobody': unassigned ones; an operator's email",
    )
    limit: int = Field(default=50, ge=1, le=500)


class TicketRef(BaseModel):
    ticket_id: uuid.UUID


class TicketReply(TicketRef):
    message: str = Field(min_length=1)


async def _assignee_id(ctx: Context, assigned: str) -> int | None:
    """The operator whose tickets `assigned` asks for ("me" or an email), None for nobody / anyone."""
    if assigned.lower() == "me":
        if ctx.caller.operator_id is None:
            raise ValidationFailed("assigned: 'me' needs a signed-in operator; give an operator's email")
        return ctx.caller.operator_id
    if assigned and assigned.lower() != "nobody":
        return (await operators.require_by_email(ctx.session, assigned)).id
    return None


async def list_tickets(ctx: Context, data: TicketFilter) -> dict[str, Any]:
    session = ctx.session
    customer_id = (await accounts.require_by_email(session, data.email)).id if data.email else None
    if customer_id is not None:  # a reseller naming another's customer: 404, as for none
        await resellers.require_own(session, ctx.caller, customer_id, f"no customer with email {data.email}")
    assigned = data.assigned.strip()
    rows, total = await desk.inbox(
        session,
        customer_id=customer_id,
        among=resellers.scope_of(ctx.caller),  # a reseller: its own customers' tickets only
        status=data.status,
        assigned_to=await _assignee_id(ctx, assigned),
        unassigned=assigned.lower() == "nobody",
        limit=data.limit,
    )
    held = await desk.assignees(session, [t.id for t in rows])
    items = [{**await ticket_json(session, t, False), "assigned_to": held.get(t.id)} for t in rows]
    return {"total": total, "items": items}


async def show(ctx: Context, data: TicketRef) -> dict[str, Any]:
    return await ticket_json(ctx.session, await tickets.get_ticket(ctx.session, None, data.ticket_id), True)


async def reply(ctx: Context, data: TicketReply) -> dict[str, Any]:
    t = await tickets.get_ticket(ctx.session, None, data.ticket_id)
    await tickets.reply(ctx.session, t, tickets.SUPPORT, data.message)
    return await ticket_json(ctx.session, t, True)


async def close(ctx: Context, data: TicketRef) -> dict[str, Any]:
    t = await tickets.get_ticket(ctx.session, None, data.ticket_id)
    return await ticket_json(ctx.session, await tickets.close(ctx.session, t), False)


_ALL = OPERATOR_DOORS  # the console's tickets inbox runs these too
OWN = "reseller.tickets"  # a reseller: its own customers' tickets only (domains/operators/resellers.py)
LIST = operator_op(
    "ticket_list",
    list_tickets,
    TicketFilter,
    Effect.READ,
    permission="tickets.read",
    doors=_ALL,
    reseller=OWN,
)
T = "ticket_id"
SHOW = operator_op(
    "ticket_show",
    show,
    TicketRef,
    Effect.READ,
    permission="tickets.read",
    doors=_ALL,
    reseller=OWN,
    bound_by=T,
)
REPLY = operator_op(
    "ticket_reply", reply, TicketReply, permission="tickets.write", doors=_ALL, reseller=OWN, bound_by=T
)
CLOSE = operator_op(
    "ticket_close", close, TicketRef, permission="tickets.write", doors=_ALL, reseller=OWN, bound_by=T
)
register(LIST, SHOW, REPLY, CLOSE)
