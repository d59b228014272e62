"""Resellers (issue 33.4): an operator of the role "reseller" with its price (a discount off face value),
its prepaid wallet (a guarded balance row and an append-only ledger, integer cents, never negative) and
the customers bound to it (the ones it created). Written by storage/repos/resellers.py only."""

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class Reseller(Base):
    """One reseller: its discount (percent off face value: it pays (100 - discount)% of what it credits)
    and its balance row, the guard of its ledger (updated with each entry, never below zero)."""

    __tablename__ = "resellers"
    __table_args__ = (
        CheckConstraint("balance_cents >= 0", name="reseller_non_negative"),
        CheckConstraint("discount_percent >= 0 AND discount_percent <= 90", name="reseller_discount"),
    )

    operator_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("operators.id", ondelete="CASCADE"), primary_key=True
    )
    discount_percent: Mapped[int] = mapped_column(Integer, default=0)
    balance_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ResellerCustomer(Base):
    """A customer bound to the reseller that created it (one reseller per customer, for good)."""

    __tablename__ = "reseller_customers"

    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True)
    operator_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("resellers.operator_id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ResellerLedgerEntry(Base):
    """One movement of a reseller's wallet (append-only: triggers refuse UPDATE and DELETE).
    kind: "deposit" (the provider sold it credit), "customer_credit" (it credited a customer `face_cents`
    and paid `-amount_cents`), "adjustment" (the provider took credit back). `reference`: the door's
    once-only key of the call that wrote it (unique: the same form never charges twice)."""

    __tablename__ = "reseller_ledger"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    operator_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("resellers.operator_id", ondelete="CASCADE"), index=True
    )
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    balance_after_cents: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(30))
    customer_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    face_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    description: Mapped[str] = mapped_column(String(500), default="")
    reference: Mapped[str | None] = mapped_column(String(200), unique=True, nullable=True)
    actor: Mapped[str] = mapped_column(String(320), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
