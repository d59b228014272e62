"""Usage batches already applied (issue 35): the exactly-once guard of the gateway's usage spool.

A gateway node writes every metered batch to a local spool file named by a random id before it reaches
the store (gateway/usage_spool.py); the transaction that adds a batch's rows to the usage tables inserts
its id here first, so a batch replayed after a crash, a store outage or a lost commit acknowledgement is
applied once. Rows older than the retention are pruned by the same writer (storage/repos/usage_batches.py).
"""

from datetime import datetime

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class UsageBatch(Base):
    __tablename__ = "usage_batches"
    __table_args__ = (Index("ix_usage_batches_applied_at", "applied_at"),)

    batch_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    applied_at: Mapped[datetime] = mapped_column(UTCDateTime(timezone=True))
