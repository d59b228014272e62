"""Hourly and daily rollups of the metered usage, and the indexes the paged lists read by.

- `usage_rollups`: per (service, span, bucket, destination host) the sums of `usage_minutes` over the
  bucket; span "h" (bucket = UTC start of the hour) or "d" (UTC midnight).
- `usage_error_rollups`: per (service, span, bucket, category) the sums of `usage_errors` (all hosts).

The usage sink adds a flush's minutes to both tables in the same transaction, with the same additive
upsert as the minutes, so a bucket always equals the sum of its minutes. Reads over a window take whole
days and hours from here and only the ragged edges from the minute tables (domains/usage/windows.py).
"""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base
from proxyplane.storage.models.services import Service
from proxyplane.storage.models.stock import StockIp
from proxyplane.storage.models.wallet import LedgerEntry
from proxyplane.storage.types import UTCDateTime

SPANS: tuple[str, ...] = ("h", "d")


class UsageRollup(Base):
    __tablename__ = "usage_rollups"

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    span: Mapped[str] = mapped_column(String(1), primary_key=True)  # "h" or "d"
    bucket: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)  # UTC start of the span
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger, default=0)
    connections: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_up: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_down: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(BigInteger, default=0)


class UsageErrorRollup(Base):
    __tablename__ = "usage_error_rollups"

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    span: Mapped[str] = mapped_column(String(1), primary_key=True)
    bucket: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)


# paged lists (issue 15.4): a customer's services newest first, ledger newest first
Index("ix_services_customer_number", Service.customer_id, Service.number)
Index("ix_ledger_entries_customer_id_id", LedgerEntry.customer_id, LedgerEntry.id)
# bulk stock import: reactivating retired IPs finds them without a scan of the stock
Index(
    "ix_stock_ips_retired_address",
    StockIp.address,
    postgresql_where=StockIp.retired_at.is_not(None),
    sqlite_where=StockIp.retired_at.is_not(None),
)
