"""Traffic and request quotas of services (issue 32): one row per service whose plan meters traffic.

- `quota_bytes` / `quota_requests`: the plan's quota per period (None: that one is not metered);
  `extra_bytes`: traffic bought for the current period (add_traffic, auto top-up); the byte limit the
  gateway enforces is `quota_bytes + extra_bytes`.
- `period`: "term" (reset when a renewal is paid), "month" (calendar month, UTC: reset at `resets_at`) or
  "none" (a package that never expires). `period_start` is when the current period began.
- `used_bytes` / `used_requests`: metered in the current period by the usage flush (like a sub-user's
  counters, domains/quotas/metering.py); `limit_reached` set by the flush when a quota is used up (the
  gateway refuses the service then); `notified_pct` the highest usage event sent this period (0, 80, 100).
- `auto_*`: the optional auto top-up (off while `auto_threshold_pct` is None): at that % of the limit, buy
  `auto_gb` GB from the wallet, at most `auto_max` times a period (`auto_count` so far).
- `gb_price_cents`: the per-GB rate of this service's traffic (the plan's, copied at purchase); for a
  pay-as-you-go service the price of one unit.
- pay as you go (`period` "payg", migration 0038): `payg_unit_bytes` the unit billed per started unit,
  `billed_units` the units charged so far, `billed_hour` the hour of the last ledger entry (one a service an
  hour at most). `extra_bytes` is then the limit the wallet covers (domains/quotas/payg.py).

Writes live in storage/repos/quotas.py. Triggers (migration 0030) log a gateway change of the service when
a column a node serves changes (limits, extra, limit_reached, period_start); counter updates log nothing.
"""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime

PERIODS: tuple[str, ...] = ("term", "month", "none")
PAYG = "payg"  # the period of a pay-as-you-go service (not a product's quota_period: its plan)


class ServiceQuota(Base):
    __tablename__ = "service_quotas"
    __table_args__ = (Index("ix_service_quotas_resets_at", "resets_at"),)

    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), primary_key=True
    )
    period: Mapped[str] = mapped_column(String(10), default="term")
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    quota_requests: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    extra_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    gb_price_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    used_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    used_requests: Mapped[int] = mapped_column(BigInteger, default=0)
    limit_reached: Mapped[bool] = mapped_column(Boolean, default=False)
    notified_pct: Mapped[int] = mapped_column(Integer, default=0)
    period_start: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    resets_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)  # month periods
    auto_threshold_pct: Mapped[int | None] = mapped_column(Integer, nullable=True)
    auto_gb: Mapped[int] = mapped_column(Integer, default=0)
    auto_max: Mapped[int] = mapped_column(Integer, default=0)
    auto_count: Mapped[int] = mapped_column(Integer, default=0)
    payg_unit_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    billed_units: Mapped[int] = mapped_column(BigInteger, default=0)
    billed_hour: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
