"""Free-IP counts of the stock on sale (issue 15, O(1) availability reads): signed deltas per (pool,
country by each geo source), written by database triggers on stock_ips in the transaction of every change
(migration 0021o), summed by readers, folded into one row per key by the renewal job
(domains/stock/free_counts.py). An IP is free when it is not retired and assigned_count < capacity."""

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK


class StockFree(Base):
    __tablename__ = "stock_free"
    __table_args__ = (Index("ix_stock_free_kind", "product_kind"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    product_kind: Mapped[str] = mapped_column(String(30))
    country_maxmind: Mapped[str] = mapped_column(String(2))
    country_ripe: Mapped[str] = mapped_column(String(2))
    free: Mapped[int] = mapped_column(Integer)  # +n IPs became free, -n stopped being free
