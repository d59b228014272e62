"""Support ticket operations under /customer/tickets (tickets:read / tickets:write)."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import INT32_MAX, documented
from proxyplane.core.scopes import Scope
from proxyplane.core.text_input import Label
from proxyplane.domains.tickets import service
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import Ticket, TicketMessage


class MessageRecord(BaseModel):
    message_id: int
    author: str = Field(
        description="customer or support", json_schema_extra=documented(enum=["customer", "support"])
    )
    body: str
    created_at: datetime


class TicketSummary(BaseModel):
    ticket_id: uuid.UUID
    subject: str
    status: str = Field(
        description="open (waiting for support), answered or closed",
        json_schema_extra=documented(enum=["open", "answered", "closed"]),
    )
    service_id: uuid.UUID | None
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None


class TicketRecord(TicketSummary):
    messages: list[MessageRecord]


class TicketPage(BaseModel):
    items: list[TicketSummary]
    offset: int
    limit: int
    total: int


class TicketQuery(BaseModel):
    status: str | None = Field(default=None, pattern="^(open|answered|closed)$")
    offset: int = Field(default=0, ge=0, le=INT32_MAX)
    limit: int = Field(default=50, ge=1, le=100)


class TicketOpen(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Label = Field(min_length=1, max_length=200)
    message: str = Field(min_length=1, max_length=20_000)
    service_id: uuid.UUID | None = Field(default=None, description="the service the ticket is about")


class TicketRef(BaseModel):
    ticket_id: uuid.UUID


class TicketReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ticket_id: uuid.UUID
    message: str = Field(min_length=1, max_length=20_000)


def summary(t: Ticket) -> TicketSummary:
    return TicketSummary(
        ticket_id=t.id,
        subject=t.subject,
        status=t.status,
        service_id=t.service_id,
        created_at=t.created_at,
        updated_at=t.updated_at,
        closed_at=t.closed_at,
    )


def message_record(m: TicketMessage) -> MessageRecord:
    return MessageRecord(message_id=m.id, author=m.author, body=m.body, created_at=m.created_at)


async def full(ctx: Context, t: Ticket) -> TicketRecord:
    msgs = await service.messages(ctx.session, t)
    return TicketRecord(**summary(t).model_dump(), messages=[message_record(m) for m in msgs])


async def list_tickets(ctx: Context, q: TicketQuery) -> TicketPage:
    rows, total = await service.list_tickets(ctx.session, ctx.customer_id, q.status, q.offset, q.limit)
    return TicketPage(items=[summary(t) for t in rows], offset=q.offset, limit=q.limit, total=total)


async def open_ticket(ctx: Context, data: TicketOpen) -> TicketRecord:
    t = await service.open_ticket(ctx.session, ctx.customer_id, data.subject, data.message, data.service_id)
    return await full(ctx, t)


async def get_ticket(ctx: Context, data: TicketRef) -> TicketRecord:
    return await full(ctx, await service.get_ticket(ctx.session, ctx.customer_id, data.ticket_id))


async def reply_ticket(ctx: Context, data: TicketReply) -> TicketRecord:
    t = await service.get_ticket(ctx.session, ctx.customer_id, data.ticket_id)
    await service.reply(ctx.session, t, service.CUSTOMER, data.message)
    return await full(ctx, t)


async def close_ticket(ctx: Context, data: TicketRef) -> TicketRecord:
    t = await service.get_ticket(ctx.session, ctx.customer_id, data.ticket_id)
    return await full(ctx, await service.close(ctx.session, t))


READ = frozenset({Scope.tickets_read})
WRITE = frozenset({Scope.tickets_write})
TAGS = ("tickets",)
register(
    Operation(
        name="list_tickets",
        summary="Your support tickets, most recently updated first.",
        method="GET",
        path="/customer/tickets",
        handler=list_tickets,
        input=TicketQuery,
        output=TicketPage,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="open_ticket",
        summary="Open a support ticket with a subject and a first message (optionally about a service).",
        method="POST",
        path="/customer/tickets",
        handler=open_ticket,
        input=TicketOpen,
        output=TicketRecord,
        scopes=WRITE,
        effect=Effect.WRITE,
        status_code=201,
        tags=TAGS,
    ),
    Operation(
        name="get_ticket",
        summary="One ticket with all its messages.",
        method="GET",
        path="/customer/tickets/{ticket_id}",
        handler=get_ticket,
        input=TicketRef,
        output=TicketRecord,
        scopes=READ,
        tags=TAGS,
    ),
    Operation(
        name="reply_ticket",
        summary="Add your reply to a ticket (reopens it if it was closed).",
        method="POST",
        path="/customer/tickets/{ticket_id}/reply",
        handler=reply_ticket,
        input=TicketReply,
        output=TicketRecord,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
    Operation(
        name="close_ticket",
        summary="Close a ticket (a later reply reopens it).",
        method="POST",
        path="/customer/tickets/{ticket_id}/close",
        handler=close_ticket,
        input=TicketRef,
        output=TicketRecord,
        scopes=WRITE,
        effect=Effect.WRITE,
        tags=TAGS,
    ),
)
