"""The gateway change log (issue 14): one row per changed key, read by gateway nodes by sequence number.

``key`` is a service id (text; the database's own rendering of the uuid) or ``pool:<product_kind>`` for a
change of the stock a rotating pool draws from. Every change re-stamps the key's row with a new ``seq``
(an upsert), so the log is compacted by key: it never holds more rows than there are keys, and a node reads
``WHERE seq > :last ORDER BY seq`` on the ``seq`` index. Rows are written by database triggers created by
migration 0012c (PostgreSQL: statement-level, one row per distinct key per statement, plus NOTIFY
``proxyplane_changes``; SQLite: row-level). ``xid`` is the writing transaction's id on PostgreSQL (0 on
SQLite): a node that just loaded everything uses it once to catch the transactions that were still open.
"""

from sqlalchemy import BigInteger, Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base


class GatewayChange(Base):
    __tablename__ = "gateway_changes"
    __table_args__ = (Index("ix_gateway_changes_seq", "seq", unique=True),)

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    xid: Mapped[int] = mapped_column(BigInteger, default=0)
    # unix seconds, database clock, re-stamped with every new seq (migration 0017e)
    changed_at: Mapped[float] = mapped_column(Float, server_default="0")
