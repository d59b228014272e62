"""Sub-users of a service (issue 18): a customer splits a service among its own users, each with a login,
optional whitelist entries, limits and allowed countries; and what the gateway metered per sub-user.

- `service_subusers`: `id` is the internal key (usage rows, whitelist), `subuser_id` the public id;
  `name` an optional label of the customer's (issue 30.11).
  `login` is unique among sub-users AND must not equal any `services.login` (the domain checks both ways).
  `used_bytes` / `used_requests` are the metered totals against the limits; `limit_reached` is set by the
  metering when a limit is crossed (the gateway refuses the sub-user then); `notified_pct` is the highest
  usage event sent (0, 80, 100).
- `subuser_whitelist`: client IPv4 addresses of a sub-user (counted against the service's slots).
- `subuser_usage_minutes` / `subuser_usage_errors`: the same shapes as usage_minutes / usage_errors, keyed
  by the sub-user's internal id.

Triggers (migration 0018b) log a change of the owning service in gateway_changes on every change a node
must see; usage counter updates alone log nothing.
"""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class ServiceSubuser(Base):
    __tablename__ = "service_subusers"
    # SQLite: AUTOINCREMENT, so a deleted sub-user's id (the key of its usage rows, gateway counters and
    # sticky sessions) is never given to a new sub-user (migration 0019b); PostgreSQL's sequence never reuses
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    subuser_id: Mapped[uuid.UUID] = mapped_column(unique=True, default=uuid.uuid4)
    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), index=True
    )
    login: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the customer's label (0027)
    password_enc: Mapped[str] = mapped_column(String(500))  # platform.secrets (SecretBox) ciphertext
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    traffic_limit_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    traffic_limit_requests: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    max_connections: Mapped[int | None] = mapped_column(Integer, nullable=True)  # <= the service's
    countries: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)  # ISO alpha-2, rotating only
    # issue 32.5/32.6 (migration 0041): its own anti-sharing and speed limits, within its service's
    max_client_ips: Mapped[int | None] = mapped_column(Integer, nullable=True)
    client_ip_policy: Mapped[str | None] = mapped_column(String(12), nullable=True)  # None: refuse_new
    speed_limit_bps: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    used_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    used_requests: Mapped[int] = mapped_column(BigInteger, default=0)
    limit_reached: Mapped[bool] = mapped_column(Boolean, default=False)
    notified_pct: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)

    def limits(self) -> dict[str, Any]:
        return {
            "traffic_limit_bytes": self.traffic_limit_bytes,
            "traffic_limit_requests": self.traffic_limit_requests,
            "max_connections": self.max_connections,
        }


class SubuserWhitelist(Base):
    __tablename__ = "subuser_whitelist"
    __table_args__ = (UniqueConstraint("subuser_pk", "ip", name="uq_subuser_whitelist_subuser_ip"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    subuser_pk: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("service_subusers.id", ondelete="CASCADE"), index=True
    )
    ip: Mapped[str] = mapped_column(String(45))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class SubuserUsageMinute(Base):
    __tablename__ = "subuser_usage_minutes"

    subuser_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger, default=0)
    connections: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_up: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_down: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(BigInteger, default=0)


class SubuserUsageError(Base):
    __tablename__ = "subuser_usage_errors"

    subuser_pk: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)
