"""Gateway state for exit-IP health and cross-node connection limits (issue 9 hardening).

- `usage_exit_errors`: upstream failures (connect error, refused, timeout) per (service, UTC minute, exit
  IP, category), added to with the same upsert as `usage_errors`; the legacy networkstatus/errors endpoint
  and the usage errors operation read it.
- `gateway_node_connections`: one row per gateway node: its open connections per service (JSON object
  service id -> count), rewritten every second; each node admits a connection only while its own count
  plus the other live nodes' reported counts is under the service's limit (see gateway/node_limits.py).
"""

import uuid
from datetime import datetime

from sqlalchemy import JSON, BigInteger, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class UsageExitError(Base):
    __tablename__ = "usage_exit_errors"

    service_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    minute: Mapped[datetime] = mapped_column(UTCDateTime(), primary_key=True)  # UTC start of the minute
    exit_ip: Mapped[str] = mapped_column(String(45), primary_key=True)
    category: Mapped[str] = mapped_column(String(40), primary_key=True)  # connect, refused, timeout
    count: Mapped[int] = mapped_column(BigInteger, default=0)


class GatewayNodeConnections(Base):
    __tablename__ = "gateway_node_connections"

    node_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    counts: Mapped[dict[str, int]] = mapped_column(JSON, default=dict)  # service id -> open connections
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
