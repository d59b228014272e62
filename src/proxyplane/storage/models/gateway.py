"""Gateway state shared through the store: per-minute usage, sticky sessions, proxy session settings.

- `usage_minutes` / `usage_errors`: what the gateway metered, per (service, UTC minute, destination host);
  nodes add to rows with an upsert (ON CONFLICT ... DO UPDATE SET n = n + excluded.n), so several nodes
  and repeated flushes of one minute just add up.
- `sticky_sessions`: one row per (service, sid). Gateway nodes write the sessions they create; the API
  writes rotations and ends (ended=true; sid "*" is a purge marker). `writer` says who wrote the row last
  (a node id or "api"); each node applies rows written by others (see docs/decisions/gateway.md "Gateway").
- `proxy_settings`: the session mode, pin and sticky TTL of a rotating service, and the last password
  rotation key (sha256) that makes PUT .../proxy/auth repeatable.

Every change to what a service grants also bumps `services.updated_at` in the same transaction. Gateway
nodes follow the change log (`gateway_changes`, 0012c), not this column: its index was dropped (0023p).
"""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime

SESSION_MODES: tuple[str, ...] = ("rotating", "sticky", "pinned")
PURGE_SID = "*"
# a sticky session on an upstream supplier (issue 36.4) holds "upstream:<upstream id, 32 hex>" as its
# exit_ip: the gateway's nodes and workers share it like any sticky session; the sticky API leaves it out
SUPPLIER_MARK = "upstream:"


class UsageMinute(Base):
    __tablename__ = "usage_minutes"

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)  # UTC start of the minute
    host: Mapped[str] = mapped_column(String(255), primary_key=True)  # destination host ("" unknown)
    requests: Mapped[int] = mapped_column(BigInteger, default=0)
    connections: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_up: Mapped[int] = mapped_column(BigInteger, default=0)  # client -> destination
    bytes_down: Mapped[int] = mapped_column(BigInteger, default=0)  # destination -> client
    errors: Mapped[int] = mapped_column(BigInteger, default=0)  # all categories (details: usage_errors)


class UsageError(Base):
    __tablename__ = "usage_errors"

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    host: Mapped[str] = mapped_column(String(255), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)  # auth, inactive, limit, upstream...
    count: Mapped[int] = mapped_column(BigInteger, default=0)


class StickySession(Base):
    __tablename__ = "sticky_sessions"
    __table_args__ = (Index("ix_sticky_sessions_updated_at", "updated_at"),)

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    # a sub-user's session: "<sub-user pk>:<sid>" (issue 18; the gateway's sticky_sync splits and joins)
    sid: Mapped[str] = mapped_column(String(96), primary_key=True)
    exit_ip: Mapped[str] = mapped_column(String(45))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended: Mapped[bool] = mapped_column(Boolean, default=False)
    writer: Mapped[str] = mapped_column(String(40))  # gateway node id, or "api"
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ProxySettings(Base):
    __tablename__ = "proxy_settings"

    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), primary_key=True
    )
    session_mode: Mapped[str] = mapped_column(String(10), default="rotating")
    pin: Mapped[str | None] = mapped_column(String(45), nullable=True)
    sticky_ttl_seconds: Mapped[int] = mapped_column(Integer, default=600)
    rotation_key_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
