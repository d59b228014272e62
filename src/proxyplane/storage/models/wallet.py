"""Wallet: an append-only ledger, a guarded balance row, deposits, and stored idempotent results."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class Wallet(Base):
    """The balance guard: updated in the same transaction as each ledger entry, never below zero.
    The ledger stays the source of truth; tests check that the two always agree."""

    __tablename__ = "wallets"
    __table_args__ = (CheckConstraint("balance_cents >= 0", name="non_negative"),)

    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True)
    balance_cents: Mapped[int] = mapped_column(BigInteger, default=0)


class LedgerEntry(Base):
    __tablename__ = "ledger_entries"
    __table_args__ = (Index("ix_ledger_entries_customer_seq", "customer_id", "seq", unique=True),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # no index of its own: the (customer_id, seq) and (customer_id, id) indexes serve it (migration 0022p)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(30))
    description: Mapped[str] = mapped_column(String(500), default="")
    service_id: Mapped[uuid.UUID | None] = mapped_column(nullable=True, index=True)
    invoice_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    deposit_id: Mapped[uuid.UUID | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    # 1, 2, 3, ... per customer in id order, set by a database trigger on insert (migration 0013b): the
    # ledger list pages by it (wallet/ledger.py)
    seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class Deposit(Base):
    __tablename__ = "deposits"
    __table_args__ = (
        UniqueConstraint("customer_id", "idempotency_key", name="uq_deposits_customer_key"),
        CheckConstraint("amount_cents > 0", name="positive"),
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    payment_method: Mapped[str] = mapped_column(String(40))
    processor: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default="pending")
    checkout_url: Mapped[str] = mapped_column(String(1000), default="")
    provider_ref: Mapped[str | None] = mapped_column(String(200), nullable=True, unique=True)
    idempotency_key: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    completed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class IdempotencyRecord(Base):
    """The first result of a charging call, replayed for every retry with the same key."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("customer_id", "operation", "key", name="uq_idem_customer_op_key"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"))
    operation: Mapped[str] = mapped_column(String(80))
    key: Mapped[str] = mapped_column(String(200))
    request_hash: Mapped[str] = mapped_column(String(64))
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)


class LoginEvent(Base):
    """Sign-ins (dashboard and legacy Basic auth): time, client IP, user agent."""

    __tablename__ = "login_events"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    channel: Mapped[str] = mapped_column(String(20))
    client_ip: Mapped[str] = mapped_column(String(45), default="")
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    success: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
