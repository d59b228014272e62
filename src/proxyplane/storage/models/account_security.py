"""Account security (issue 34): emailed single-use links, the TOTP second factor with its recovery
codes, and app passwords for the legacy Basic API once two-factor sign-in is on."""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class AccountToken(Base):
    """A link sent by email (verify the address, reset the password, confirm a new address). The link
    carries a random token; only its sha256 is stored. Used once (`used_at`), valid until `expires_at`."""

    __tablename__ = "account_tokens"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    purpose: Mapped[str] = mapped_column(String(20))
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class TwoFactor(Base):
    """A customer's TOTP secret (encrypted by the platform's SecretBox). `enabled_at` null: being set up
    (the secret is shown, no code confirmed yet). `last_step`: the last accepted time step (no replay)."""

    __tablename__ = "customer_two_factor"

    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), primary_key=True)
    secret_encrypted: Mapped[str] = mapped_column(String(500))
    enabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_step: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RecoveryCode(Base):
    """One single-use recovery code (its sha256; core/totp.recovery_hash)."""

    __tablename__ = "customer_recovery_codes"
    __table_args__ = (UniqueConstraint("customer_id", "code_hash", name="uq_recovery_codes_customer_hash"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"))
    code_hash: Mapped[str] = mapped_column(String(64))
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class AppPassword(Base):
    """A password for scripts and the legacy Basic API (email + app password), made by the customer;
    random, so stored as sha256 like an API key. The only Basic credential once two-factor is on."""

    __tablename__ = "app_passwords"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
