"""MCP state shared by all API processes (issue 35.3).

`mcp_sessions`: a 2025-11-25 Streamable HTTP session (a client that declared elicitation): whose key opened
it and what its `initialize` negotiated, so any API process can serve the session's next request and a
restarted process still knows it. `mcp_relay`: short-lived messages between the API processes (a client's
answer to a question another process asked, a session ended, an account's listen-stream event), read by
every process's poller (adapters/mcp/relay.py) and pruned after a minute. Written only by
storage/repos/mcp_sessions.py."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class McpSession(Base):
    __tablename__ = "mcp_sessions"
    __table_args__ = (Index("ix_mcp_sessions_seen_at", "seen_at"),)

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(64))  # the opening key's (or OAuth grant's) id
    customer_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    protocol_version: Mapped[str] = mapped_column(String(40))
    client: Mapped[dict[str, Any]] = mapped_column(JSON)  # the initialize request's params, as negotiated
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(timezone=True))
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime(timezone=True))


class McpRelay(Base):
    __tablename__ = "mcp_relay"
    __table_args__ = (Index("ix_mcp_relay_created_at", "created_at"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))  # reply | closed | event
    target: Mapped[str] = mapped_column(String(64))  # a session id, a process token, a customer id or ""
    origin: Mapped[str] = mapped_column(String(40))  # the process that wrote it (it does not read it back)
    body: Mapped[Any] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(timezone=True))
