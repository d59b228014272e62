"""OAuth 2.1 for the MCP server (issue 21.2): clients, authorization requests, grants and tokens.

A grant (one customer's consent to one client) is backed by an `api_keys` row that no raw key can open
(its hash is of a secret nobody was given): its scopes, spending caps (`api_key_spending`), last use and
revocation are the API key machinery, unchanged. Tokens and codes are stored as sha256 hashes only."""

import uuid
from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import UTCDateTime


class OAuthClient(Base):
    """A client: registered dynamically (RFC 7591) or a fetched client ID metadata document (cached)."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String(500), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))  # "dcr" | "cimd"
    document: Mapped[str] = mapped_column(Text)  # the client metadata as JSON
    fetched_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class OAuthRequest(Base):
    """One authorization request, from /authorize through consent to its code's exchange (single use)."""

    __tablename__ = "oauth_requests"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    client_id: Mapped[str] = mapped_column(String(500))
    redirect_uri: Mapped[str] = mapped_column(String(2000))
    redirect_uri_explicit: Mapped[bool] = mapped_column(Boolean, default=True)
    state: Mapped[str | None] = mapped_column(String(500), nullable=True)
    code_challenge: Mapped[str] = mapped_column(String(128))
    scopes: Mapped[list[str]] = mapped_column(JSON)  # requested (may be empty: the customer picks)
    resource: Mapped[str] = mapped_column(String(2000))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    customer_id: Mapped[int | None] = mapped_column(
        ForeignKey("customers.id", ondelete="CASCADE"), nullable=True
    )
    grant_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("oauth_grants.id", ondelete="CASCADE"), nullable=True
    )
    code_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class OAuthGrant(Base):
    """A customer's consent to a client: scopes, caps (on its api_keys row), confirm_spending."""

    __tablename__ = "oauth_grants"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    api_key_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), unique=True)
    client_id: Mapped[str] = mapped_column(String(500))
    client_name: Mapped[str] = mapped_column(String(200))
    resource: Mapped[str] = mapped_column(String(2000))
    confirm_spending: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class OAuthToken(Base):
    """An access or refresh token of a grant (hash only). A refresh is single use: rotation."""

    __tablename__ = "oauth_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(10))  # "access" | "refresh"
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
