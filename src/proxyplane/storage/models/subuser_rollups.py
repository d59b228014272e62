"""Hourly and daily rollups of the sub-users' metered usage, and their upstream failures per exit IP
(issue 18; migration 0019c).

- `subuser_usage_rollups`: per (sub-user internal id, span, bucket, destination host) the sums of
  `subuser_usage_minutes` over the bucket; span "h" (bucket = UTC start of the hour) or "d" (UTC midnight).
- `subuser_usage_error_rollups`: per (sub-user, span, bucket, category) the sums of `subuser_usage_errors`.
- `subuser_usage_exit_errors`: upstream failures (connect, refused, timeout) per (sub-user, UTC minute,
  exit IP, category), the sub-user's share of `usage_exit_errors`.

domains/subusers/metering.apply_usage (the one writer of the sub-users' minute tables) adds a flush's rows
to all of them in the same transaction with the same additive upsert, so a bucket always equals the sum of
its minutes (the same model as usage_rollups for services).
"""

from datetime import datetime

from sqlalchemy import BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class SubuserUsageRollup(Base):
    __tablename__ = "subuser_usage_rollups"

    subuser_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    span: Mapped[str] = mapped_column(String(1), primary_key=True)  # "h" or "d"
    bucket: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)  # UTC start of the span
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger, default=0)
    connections: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_up: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_down: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(BigInteger, default=0)


class SubuserUsageErrorRollup(Base):
    __tablename__ = "subuser_usage_error_rollups"

    subuser_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    span: Mapped[str] = mapped_column(String(1), primary_key=True)
    bucket: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)


class SubuserUsageExitError(Base):
    __tablename__ = "subuser_usage_exit_errors"

    subuser_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    exit_ip: Mapped[str] = mapped_column(String(45), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)  # connect, refused, timeout
    count: Mapped[int] = mapped_column(BigInteger, default=0)
