"""Upstream proxy suppliers (issue 36.4): endpoints the gateway chains a rotating product's traffic through.

- `upstreams`: one supplier endpoint of a pool (`pool`, a name a product's config names as
  `upstream_pool`), tried in `position` order (the next one when it refuses or times out). `scheme` is
  "http" (CONNECT) or "socks5"; `username` is the supplier account's, `password_enc` its password sealed
  with the server's SecretBox (never shown again); `template` maps our targeting and session onto the
  supplier's username syntax (core/proxy_chain.py). `cost_per_gb_cents`: what the supplier charges per GB
  (decimal, 10^9 bytes) relayed. `health`/`checked_at`/`check_error`/`check_ms`: the last health check
  (`operator_upstream_check`), "unknown" until one ran; `check_target` the host:port it tunnels to.
- `upstream_usage`: what gateway nodes relayed through each upstream per UTC hour (bytes both ways,
  tunnels opened, failed attempts): the cost side of the operator's margin report.

Writes live in storage/repos/upstreams.py.
"""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime

SCHEMES: tuple[str, ...] = ("http", "socks5")


class Upstream(Base):
    __tablename__ = "upstreams"
    __table_args__ = (UniqueConstraint("pool", "position", name="uq_upstreams_pool_position"),)

    upstream_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    pool: Mapped[str] = mapped_column(String(40), index=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(100), default="")
    scheme: Mapped[str] = mapped_column(String(10))
    host: Mapped[str] = mapped_column(String(255))
    port: Mapped[int] = mapped_column(Integer)
    username: Mapped[str] = mapped_column(String(255), default="")
    password_enc: Mapped[str] = mapped_column(String(1000), default="")
    template: Mapped[str] = mapped_column(String(300), default="{user}")
    cost_per_gb_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    check_target: Mapped[str] = mapped_column(String(300), default="example.com:80")
    health: Mapped[str] = mapped_column(String(10), default="unknown")
    checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    check_error: Mapped[str] = mapped_column(String(300), default="")
    check_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class UpstreamUsage(Base):
    __tablename__ = "upstream_usage"

    upstream_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("upstreams.upstream_id", ondelete="CASCADE"), primary_key=True
    )
    hour: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)
    bytes_up: Mapped[int] = mapped_column(BigInteger, default=0)
    bytes_down: Mapped[int] = mapped_column(BigInteger, default=0)
    tunnels: Mapped[int] = mapped_column(BigInteger, default=0)
    failures: Mapped[int] = mapped_column(BigInteger, default=0)
