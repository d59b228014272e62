"""The operators' side of a support ticket (issue 33): who on the team has it, and internal notes the
customer never sees (the customer's doors read ticket_messages only)."""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class TicketAssignment(Base):
    """One ticket's assignee (no row: unassigned)."""

    __tablename__ = "ticket_assignments"

    ticket_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("tickets.id", ondelete="CASCADE"), primary_key=True
    )
    operator_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("operators.id"), index=True)
    assigned_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class TicketNote(Base):
    """An internal note on a ticket by an operator (or the host's CLI: operator_id None, author "cli")."""

    __tablename__ = "ticket_notes"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    ticket_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tickets.id", ondelete="CASCADE"), index=True)
    operator_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    author: Mapped[str] = mapped_column(String(320))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
