"""IPv6 stock from routed prefixes (issue 16): a prefix per row, a row per ALLOCATED subnet only.

`stock_prefixes`: a routed prefix (e.g. "2001:db8::/48") in a pool (product kind `proxy_ipv6`), split into
subnets of `subnet_len` bits (a /64 by default). Subnets are numbered 0 .. 2**(subnet_len - prefix_len) - 1
and handed out in index order: `next_index` is the cursor (a /48 holds 65,536 /64s and never a row per
subnet or address). `service_subnets`: the subnets a service holds, live while `released_at` is null; a
released subnet is handed out again before the cursor advances (domains/stock/subnets.py). The partial
unique index `uq_service_subnets_live` is the last line of defence: one live service per subnet.
"""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime

IPV6_KIND = "proxy_ipv6"


class StockPrefix(Base):
    __tablename__ = "stock_prefixes"
    __table_args__ = (
        CheckConstraint("subnet_len > 0 AND subnet_len <= 128", name="subnet_len"),
        CheckConstraint("next_index >= 0", name="next_index"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    product_kind: Mapped[str] = mapped_column(String(30), default=IPV6_KIND)
    prefix: Mapped[str] = mapped_column(String(43), unique=True)  # normalised CIDR "2001:db8::/48"
    subnet_len: Mapped[int] = mapped_column(Integer, default=64)  # the split size (a /64 per service)
    country_maxmind: Mapped[str] = mapped_column(String(2))
    country_ripe: Mapped[str] = mapped_column(String(2))
    next_index: Mapped[int] = mapped_column(BigInteger, default=0)  # subnets handed out from the cursor
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    def country(self, geo_source: str) -> str:
        return self.country_ripe if geo_source == "ripe" else self.country_maxmind


class ServiceSubnet(Base):
    """One subnet of a prefix allocated to a service. Live while `released_at` is null."""

    __tablename__ = "service_subnets"
    __table_args__ = (
        Index(
            "uq_service_subnets_live",
            "subnet",
            unique=True,
            postgresql_where=text("released_at IS NULL"),
            sqlite_where=text("released_at IS NULL"),
        ),
        Index("ix_service_subnets_prefix_subnet", "prefix_id", "subnet"),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), index=True
    )
    prefix_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("stock_prefixes.id"))  # as 0018d made it
    subnet: Mapped[str] = mapped_column(String(43))  # normalised CIDR "2001:db8:0:5::/64"
    country: Mapped[str] = mapped_column(String(2))  # by the service's geo source
    allocated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
