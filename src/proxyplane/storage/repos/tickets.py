"""The writer of tickets and ticket_messages (the desk's assignments and notes: ticket_desk.py). Nothing
here commits; status changes of a loaded ticket are the unit of work's (domains/tickets/service.py)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import Ticket, TicketMessage


async def insert_ticket(
    session: AsyncSession,
    customer_id: int,
    subject: str,
    status: str,
    service_id: uuid.UUID | None,
    now: datetime,
) -> Ticket:
    """A new ticket row (flushed: its id is known)."""
    ticket = Ticket(
        id=uuid.uuid4(),
        customer_id=customer_id,
        subject=subject,
        status=status,
        service_id=service_id,
        created_at=now,
        updated_at=now,
    )
    session.add(ticket)
    await session.flush()
    return ticket


async def insert_message(
    session: AsyncSession, ticket_id: uuid.UUID, author: str, body: str, now: datetime
) -> TicketMessage:
    """A message on the ticket (flushed: its id is known)."""
    message = TicketMessage(ticket_id=ticket_id, author=author, body=body, created_at=now)
    session.add(message)
    await session.flush()
    return message
