"""`auth_throttles`: the shared throttle's buckets (issue 30), one row per key (a policy's name and its
subject: an account, an (account, address) pair, an address, "all"). Written only by
storage/repos/throttles.py; the arithmetic is core/throttling.py. A row whose bucket is empty
(`expires_at` passed) means nothing and is purged."""

from datetime import datetime

from sqlalchemy import Float, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class AuthThrottle(Base):
    __tablename__ = "auth_throttles"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    level: Mapped[float] = mapped_column(Float, default=0.0)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
