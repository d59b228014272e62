"""Every statement of ticket_assignments and ticket_notes (issue 33). Nothing here commits."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models import Ticket
from proxyplane.storage.models.operators import Operator
from proxyplane.storage.models.ticket_desk import TicketAssignment, TicketNote
from proxyplane.storage.repos.resellers import customer_ids as reseller_customers


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


async def assignees(session: AsyncSession, ticket_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """ticket id -> its assigned operator's email, for those of `ticket_ids` that have one."""
    if not ticket_ids:
        return {}
    found = await session.execute(
        select(TicketAssignment.ticket_id, Operator.email)
        .join(Operator, TicketAssignment.operator_id == Operator.id)
        .where(TicketAssignment.ticket_id.in_(ticket_ids))
    )
    return {tid: email for tid, email in found.all()}


async def inbox(
    session: AsyncSession,
    *,
    customer_id: int | None,
    status: str | None,
    assigned_to: int | None,
    unassigned: bool,
    limit: int,
    among: int | None = None,
) -> tuple[list[Ticket], int]:
    """Tickets, most recently updated first, and how many match: of one customer and / or one status,
    assigned to the operator `assigned_to`, or (`unassigned`) to nobody; `among`: of the customers bound
    to that reseller only."""
    where = []
    if customer_id is not None:
        where.append(Ticket.customer_id == customer_id)
    if among is not None:
        where.append(Ticket.customer_id.in_(reseller_customers(among)))
    if status:
        where.append(Ticket.status == status)
    held = select(TicketAssignment.ticket_id)
    if assigned_to is not None:
        where.append(Ticket.id.in_(held.where(TicketAssignment.operator_id == assigned_to)))
    elif unassigned:
        where.append(Ticket.id.not_in(held))
    rows = await session.execute(
        select(Ticket).where(*where).order_by(Ticket.updated_at.desc(), Ticket.id).limit(limit)
    )
    total = await session.scalar(select(func.count()).select_from(Ticket).where(*where))
    return list(rows.scalars()), int(total or 0)
