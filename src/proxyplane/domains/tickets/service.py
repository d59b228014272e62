"""Tickets and their messages. Status: `open` (waiting for support), `answered` (support replied),
`closed`. A customer reply reopens a closed ticket; a support reply emits `ticket.replied`."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import NotFound, ValidationFailed
from proxyplane.domains.events.service import emit
from proxyplane.storage.models import Customer, Service, Ticket, TicketMessage
from proxyplane.storage.repos import tickets as ticket_rows

CUSTOMER = "customer"
SUPPORT = "support"
STATUSES = ("open", "answered", "closed")
MAX_OPEN_TICKETS = 50


async def open_ticket(
    session: AsyncSession,
    customer_id: int,
    subject: str,
    message: str,
    service_id: uuid.UUID | None = None,
    author: str = CUSTOMER,
) -> Ticket:
    """Open a ticket. `service_id`, when given, must be one of the customer's services (any status):
    another customer's or an unknown id is refused with 422 on `service_id` (decisions/events-webhooks.md)."""
    if service_id is not None:
        owner = await session.scalar(select(Service.customer_id).where(Service.service_id == service_id))
        if owner != customer_id:
            raise ValidationFailed(f"service {service_id} not found", field="service_id")
    if author == CUSTOMER:
        open_count = await session.scalar(
            select(func.count()).where(Ticket.customer_id == customer_id, Ticket.status != "closed")
        )
        if int(open_count or 0) >= MAX_OPEN_TICKETS:
            raise ValidationFailed(f"at most {MAX_OPEN_TICKETS} open tickets per account")
    now = utcnow()
    status = "open" if author == CUSTOMER else "answered"
    ticket = await ticket_rows.insert_ticket(session, customer_id, subject.strip(), status, service_id, now)
    await ticket_rows.insert_message(session, ticket.id, author, message.strip(), now)
    return ticket


async def list_tickets(
    session: AsyncSession, customer_id: int | None, status: str | None, offset: int, limit: int
) -> tuple[list[Ticket], int]:
    where = []
    if customer_id is not None:
        where.append(Ticket.customer_id == customer_id)
    if status:
        where.append(Ticket.status == status)
    rows = await session.execute(
        select(Ticket).where(*where).order_by(Ticket.updated_at.desc(), Ticket.id).offset(offset).limit(limit)
    )
    total = await session.scalar(select(func.count()).select_from(Ticket).where(*where))
    return list(rows.scalars()), int(total or 0)


async def get_ticket(session: AsyncSession, customer_id: int | None, ticket_id: uuid.UUID) -> Ticket:
    """A customer's ticket (404 for another customer's); customer_id None = operator, any ticket."""
    ticket = await session.get(Ticket, ticket_id)
    if ticket is None or (customer_id is not None and ticket.customer_id != customer_id):
        raise NotFound(f"ticket {ticket_id} not found")
    return ticket


async def messages(session: AsyncSession, ticket: Ticket) -> list[TicketMessage]:
    rows = await session.execute(
        select(TicketMessage).where(TicketMessage.ticket_id == ticket.id).order_by(TicketMessage.id)
    )
    return list(rows.scalars())


async def reply(session: AsyncSession, ticket: Ticket, author: str, body: str) -> TicketMessage:
    now = utcnow()
    message = await ticket_rows.insert_message(session, ticket.id, author, body.strip(), now)
    ticket.updated_at = now
    if author == CUSTOMER:
        ticket.status = "open"
        ticket.closed_at = None
    else:
        ticket.status = "answered" if ticket.status != "closed" else "closed"
    await session.flush()
    if author == SUPPORT:
        await emit(
            session,
            ticket.customer_id,
            "ticket.replied",
            {
                "ticket_id": str(ticket.id),
                "subject": ticket.subject,
                "status": ticket.status,
                "message_id": message.id,
                "message": body.strip()[:2000],
            },
        )
    return message


async def close(session: AsyncSession, ticket: Ticket) -> Ticket:
    if ticket.status != "closed":
        ticket.status = "closed"
        ticket.closed_at = ticket.updated_at = utcnow()
        await session.flush()
    return ticket


async def customer_email(session: AsyncSession, customer_id: int) -> str:
    return str(await session.scalar(select(Customer.email).where(Customer.id == customer_id)) or "")
