"""The email outbox (issue 34): every message the platform sends is a row first, sent by the mail job
(jobs/mail.py) with retries; and the cursor of the job's pass over events (notifications)."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class EmailMessage(Base):
    """One email: pending -> sending (claimed, leased) -> sent | failed (refused, or out of attempts).
    `dedupe_key` (unique) makes a message that must go once (a notification of an event, a reminder of a
    term) insertable by any number of passes: the second insert does nothing."""

    __tablename__ = "email_outbox"
    __table_args__ = (Index("ix_email_outbox_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    customer_id: Mapped[int | None] = mapped_column(
        ForeignKey("customers.id", ondelete="CASCADE"), nullable=True, index=True
    )
    to_address: Mapped[str] = mapped_column(String(320))
    kind: Mapped[str] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(String(300))
    text_body: Mapped[str] = mapped_column(Text)
    html_body: Mapped[str] = mapped_column(Text)
    headers: Mapped[dict[str, Any]] = mapped_column(JSON)
    dedupe_key: Mapped[str | None] = mapped_column(String(200), unique=True, nullable=True)
    message_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    locked_by: Mapped[str | None] = mapped_column(String(100), nullable=True)
    locked_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class MailCursor(Base):
    """How far the notification pass has read the events (by created_at; it re-reads a margin)."""

    __tablename__ = "mail_cursors"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    position: Mapped[datetime] = mapped_column(UTCDateTime())
