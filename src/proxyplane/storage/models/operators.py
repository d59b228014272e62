"""The operator's side (issue 33): operator accounts (separate from customers), their console sessions,
operator API keys bound to a role and the append-only audit log (sign-in throttling: the shared
auth_throttles of issue 30)."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class Operator(Base):
    """One member of the operator's team. `password_hash` is first a one-time password (printed by
    `proxyplane admin operator create`); the first sign-in sets the real one and enrols TOTP.
    `totp_secret` is encrypted with the platform's SecretBox; `recovery_hashes` are core.totp hashes."""

    __tablename__ = "operators"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default="active")  # active | locked
    password_hash: Mapped[str] = mapped_column(String(300))
    one_time_password: Mapped[bool] = mapped_column(Boolean, default=True)
    totp_secret: Mapped[str | None] = mapped_column(Text, nullable=True)
    totp_last_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    recovery_hashes: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class OperatorSession(Base):
    """One signed-in console browser; the cookie holds a random token, only its sha256 is the id.
    `stage`: "enrol" (password accepted, TOTP to set up), "totp" (password accepted, code due), "full"."""

    __tablename__ = "operator_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[int] = mapped_column(  # BIGINT, as migration 0028 made it
        BigInteger, ForeignKey("operators.id", ondelete="CASCADE"), index=True
    )
    stage: Mapped[str] = mapped_column(String(10))
    csrf_token: Mapped[str] = mapped_column(String(64))
    pending_secret: Mapped[str | None] = mapped_column(Text, nullable=True)  # encrypted, during enrolment
    client_ip: Mapped[str] = mapped_column(String(45), default="")
    user_agent: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class OperatorApiKey(Base):
    """An operator API key (`ppo_...`, Bearer) bound to a role no wider than its operator's."""

    __tablename__ = "operator_api_keys"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    operator_id: Mapped[int] = mapped_column(  # BIGINT, as migration 0028 made it
        BigInteger, ForeignKey("operators.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(20))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class OperatorAudit(Base):
    """One operator action (append-only: the migration adds triggers refusing UPDATE and DELETE).
    `actor` is the operator's email, or "cli" for the host's command line; `form_key` makes a console
    form (or an API call's idempotency key) act once; `outcome` says whether it ran or was refused."""

    __tablename__ = "operator_audit"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, index=True)
    operator_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    actor: Mapped[str] = mapped_column(String(320), index=True)
    role: Mapped[str] = mapped_column(String(20))
    door: Mapped[str] = mapped_column(String(20))
    action: Mapped[str] = mapped_column(String(80), index=True)
    target: Mapped[str] = mapped_column(String(200), default="", index=True)
    before: Mapped[Any] = mapped_column(JSON, nullable=True)
    after: Mapped[Any] = mapped_column(JSON, nullable=True)
    detail: Mapped[Any] = mapped_column(JSON, nullable=True)  # the operation's input, secrets masked
    client_ip: Mapped[str] = mapped_column(String(45), default="")
    form_key: Mapped[str | None] = mapped_column(String(200), unique=True, nullable=True)
    # "ok" (it ran), "refused" (the role lacks the permission), "wrong" (a bad password or code), "locked"
    outcome: Mapped[str] = mapped_column(String(20), default="ok", server_default="ok", index=True)
