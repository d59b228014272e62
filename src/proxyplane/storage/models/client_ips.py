"""Client addresses seen per service by each gateway process (issue 32.5, anti-sharing).

One row per reporting process (a node, or a worker of a multi-process host): per service with a
`max_client_ips` limit, the client addresses it saw within the window and the ones it forgot
(newest_wins), as {service id: {address: last seen (epoch seconds), negative: forgotten at}}; rewritten
every `limit_refresh_seconds` with the connection counts (gateway/node_limits.py, statements in
storage/repos/client_ips.py). Each process takes the other fresh rows to count a service's addresses.
"""

from datetime import datetime

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class GatewayClientIps(Base):
    __tablename__ = "gateway_client_ips"

    reporter_id: Mapped[str] = mapped_column(String(60), primary_key=True)
    seen: Mapped[dict[str, dict[str, float]]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
