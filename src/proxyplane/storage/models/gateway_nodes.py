"""Which exit IPs each gateway node can serve (issue 14.1).

`gateway_node_addresses`: one row per gateway node: the prefixes of its host's local addresses (the
kernel's `local` routing table, collapsed: e.g. ["127.0.0.0/8", "192.0.2.2/32"], a few entries whatever
the number of exit IPs), how many static exit IPs it serves lie outside them, and a heartbeat. A node
rewrites its row at start and every 30 s and deletes it when it stops; the legacy networkstatus/inactive
endpoint lists the IPs of a service that no live node's prefixes contain (gateway/local_ips.py).
"""

from datetime import datetime

from sqlalchemy import JSON, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class GatewayNodeAddresses(Base):
    __tablename__ = "gateway_node_addresses"

    node_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    prefixes: Mapped[list[str]] = mapped_column(JSON, default=list)  # local address prefixes (CIDR)
    nonlocal_ips: Mapped[int] = mapped_column(Integer, default=0)  # static exit IPs outside them
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
