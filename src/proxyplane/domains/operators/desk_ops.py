"""The team's side of a support ticket (issue 33), on every operator door: who has it (assign to an
active operator who may answer tickets, or to nobody) and internal notes that never reach the customer
(the customer's doors read the ticket's messages only). Statements: storage/repos/ticket_desk.py."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from proxyplane.core.errors import Conflict
from proxyplane.domains.operators import service as operators
from proxyplane.domains.operators.roles import allowed
from proxyplane.domains.tickets import service as tickets
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.repos import ticket_desk as repo


class DeskRef(BaseModel):
    ticket_id: uuid.UUID


class Assign(DeskRef):
    operator_email: str = Field(default="", max_length=320, description="empty: unassign")


class Note(DeskRef):
    note: str = Field(min_length=1, max_length=10_000)


async def desk_json(ctx: Context, ticket_id: uuid.UUID) -> dict[str, Any]:
    return {
        "ticket_id": str(ticket_id),
        "assigned_to": await repo.assignee(ctx.session, ticket_id),
        "notes": [
            {"author": n.author, "body": n.body, "created_at": n.created_at.isoformat()}
            for n in await repo.notes(ctx.session, ticket_id)
        ],
    }


async def desk(ctx: Context, data: DeskRef) -> dict[str, Any]:
    await tickets.get_ticket(ctx.session, None, data.ticket_id)  # 404 for no such ticket
    return await desk_json(ctx, data.ticket_id)


async def assign(ctx: Context, data: Assign) -> dict[str, Any]:
    await tickets.get_ticket(ctx.session, None, data.ticket_id)
    before = await repo.assignee(ctx.session, data.ticket_id)
    ctx.audit.update(target=f"ticket:{data.ticket_id}", before={"assigned_to": before})
    operator_id = None
    if data.operator_email.strip():
        target = await operators.require_by_email(ctx.session, data.operator_email)
        if target.status != "active" or not allowed(target.role, "tickets.write"):
            raise Conflict(f"{target.email} cannot answer tickets (locked, or the role {target.role!r})")
        operator_id = target.id
    await repo.assign(ctx.session, data.ticket_id, operator_id)
    after = await repo.assignee(ctx.session, data.ticket_id)
    ctx.audit["after"] = {"assigned_to": after}
    return {"ticket_id": str(data.ticket_id), "assigned_to": after}


async def note(ctx: Context, data: Note) -> dict[str, Any]:
    await tickets.get_ticket(ctx.session, None, data.ticket_id)
    author = ctx.caller.actor or ctx.caller.channel
    await repo.add_note(ctx.session, data.ticket_id, ctx.caller.operator_id, author, data.note)
    ctx.audit["target"] = f"ticket:{data.ticket_id}"
    return await desk_json(ctx, data.ticket_id)


DESK = operator_op("ticket_desk", desk, DeskRef, Effect.READ, permission="tickets.read", doors=OPERATOR_DOORS)
ASSIGN = operator_op("ticket_assign", assign, Assign, permission="tickets.write", doors=OPERATOR_DOORS)
NOTE = operator_op("ticket_note", note, Note, permission="tickets.write", doors=OPERATOR_DOORS)
register(DESK, ASSIGN, NOTE)
