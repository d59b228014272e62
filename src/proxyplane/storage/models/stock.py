"""Stock: exit IPs per pool (product kind), each tagged with a country per geo source.

An IP is shared by at most `capacity` services (datacenter / ISP: a bounded number; dedicated
`proxy_personal`: exactly 1). `assigned_count` counts live allocations; the CHECK constraint
`0 <= assigned_count <= capacity` is the last line of defence against overselling, and allocation
increments it with a conditional UPDATE (see domains/stock/service.py)."""

from datetime import datetime

from sqlalchemy import CheckConstraint, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime

GEO_SOURCES: tuple[str, ...] = ("maxmind", "ripe")
POOL_KINDS: tuple[str, ...] = ("proxy_datacenter", "proxy_isp", "proxy_personal")


class StockIp(Base):
    __tablename__ = "stock_ips"
    __table_args__ = (
        CheckConstraint("assigned_count >= 0 AND assigned_count <= capacity", name="capacity"),
        CheckConstraint("capacity >= 1", name="capacity_positive"),
        # allocation (domains/stock/allocate.py): least-shared first among the IPs on sale (0012d)
        *(
            Index(
                f"ix_stock_ips_alloc_{source}",
                "product_kind",
                f"country_{source}",
                "assigned_count",
                "id",
                postgresql_where=text("retired_at IS NULL"),
                sqlite_where=text("retired_at IS NULL"),
            )
            for source in ("maxmind", "ripe")
        ),
    )

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    address: Mapped[str] = mapped_column(String(45), unique=True)  # IPv4 dotted quad
    product_kind: Mapped[str] = mapped_column(
        String(30)
    )  # the pool: proxy_datacenter|proxy_isp|proxy_personal
    country_maxmind: Mapped[str] = mapped_column(String(2))  # ISO 3166-1 alpha-2, upper case
    country_ripe: Mapped[str] = mapped_column(String(2))
    capacity: Mapped[int] = mapped_column(Integer, default=1)  # max services sharing this IP
    assigned_count: Mapped[int] = mapped_column(Integer, default=0)  # live allocations
    port: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None: the gateway's default port
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)  # not sold any more
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    def country(self, geo_source: str) -> str:
        return self.country_ripe if geo_source == "ripe" else self.country_maxmind
