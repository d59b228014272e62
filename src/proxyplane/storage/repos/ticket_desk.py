"""Every statement of ticket_assignments and ticket_notes (issue 33). Nothing here commits."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.operators import Operator
from proxyplane.storage.models.ticket_desk import TicketAssignment, TicketNote


async def assignee(session: AsyncSession, ticket_id: uuid.UUID) -> str | None:
    """The assigned operator's email, or None."""
    found = await session.execute(
        select(Operator.email)
        .join(TicketAssignment, TicketAssignment.operator_id == Operator.id)
        .where(TicketAssignment.ticket_id == ticket_id)
    )
    return found.scalar_one_or_none()


async def assign(session: AsyncSession, ticket_id: uuid.UUID, operator_id: int | None) -> None:
    """Give the ticket to `operator_id` (None: nobody)."""
    await session.execute(delete(TicketAssignment).where(TicketAssignment.ticket_id == ticket_id))
    if operator_id is not None:
        session.add(TicketAssignment(ticket_id=ticket_id, operator_id=operator_id, assigned_at=utcnow()))
    await session.flush()


async def add_note(
    session: AsyncSession, ticket_id: uuid.UUID, operator_id: int | None, author: str, body: str
) -> TicketNote:
    row = TicketNote(
        ticket_id=ticket_id, operator_id=operator_id, author=author[:320], body=body, created_at=utcnow()
    )
    session.add(row)
    await session.flush()
    return row


async def notes(session: AsyncSession, ticket_id: uuid.UUID) -> list[TicketNote]:
    rows = await session.execute(
        select(TicketNote).where(TicketNote.ticket_id == ticket_id).order_by(TicketNote.id)
    )
    return list(rows.scalars().all())
