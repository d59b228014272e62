"""Spending caps of API keys (issue 10, item 5): one row per key that carries a cap.

The counters move with a conditional UPDATE in the same transaction as the wallet debit (see
domains/apikeys/caps.py), so two concurrent charges through one key can never pass its cap together."""

import uuid

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base


class ApiKeySpending(Base):
    __tablename__ = "api_key_spending"
    __table_args__ = (
        CheckConstraint("daily_limit_cents IS NULL OR daily_limit_cents >= 0", name="daily_limit"),
        CheckConstraint("total_limit_cents IS NULL OR total_limit_cents >= 0", name="total_limit"),
    )

    key_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    daily_limit_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # per UTC day
    total_limit_cents: Mapped[int | None] = mapped_column(BigInteger, nullable=True)  # over the key's life
    spent_total_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    spent_day: Mapped[str] = mapped_column(String(10), default="")  # UTC date of spent_day_cents
    spent_day_cents: Mapped[int] = mapped_column(BigInteger, default=0)
