"""Add-ons, invoices (lines, credit notes), IP refreshes and renewal claims (issue 5).

See docs/decisions/money.md "Add-ons, refresh, invoices, renewals"."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime


class ServiceAddon(Base):
    """An add-on bought for a service. At most one `active` add-on per (service, kind)."""

    __tablename__ = "service_addons"
    __table_args__ = (
        Index(
            "uq_service_addons_active_kind",
            "service_id",
            "kind",
            unique=True,
            sqlite_where=text("status = 'active'"),
            postgresql_where=text("status = 'active'"),
        ),
    )

    addon_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), index=True
    )
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(40))  # udp | extra_whitelist_slots | extra_connections
    status: Mapped[str] = mapped_column(String(20), default="active")  # active | canceled
    quantity: Mapped[int] = mapped_column(Integer, default=1)
    # what it grants, fixed at purchase: {"udp": true} / {"whitelist_slots": n} / {"connections": n}
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    purchase_price_cents: Mapped[int] = mapped_column(BigInteger, default=0)  # charged at purchase
    monthly_cents: Mapped[int] = mapped_column(BigInteger, default=0)  # monthly price at purchase
    paid_cents: Mapped[int] = mapped_column(BigInteger, default=0)  # paid for [period_start, period_end]
    period_start: Mapped[datetime] = mapped_column(UTCDateTime())
    period_end: Mapped[datetime] = mapped_column(UTCDateTime())
    activated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    canceled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    refunded_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    invoice_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Invoice(Base):
    """One charge (or top-up) and its lines. `id` is the numeric invoice id (legacy API friendly)."""

    __tablename__ = "invoices"
    __table_args__ = (Index("ix_invoices_customer_id_desc", "customer_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"))
    service_id: Mapped[uuid.UUID | None] = mapped_column(nullable=True, index=True)
    # order | renewal | add_ips | addon | refresh | deposit | catalog | traffic
    kind: Mapped[str] = mapped_column(String(20))
    description: Mapped[str] = mapped_column(String(500), default="")
    # open (checkout pending) | paid | partially_refunded | refunded | void (checkout failed)
    status: Mapped[str] = mapped_column(String(20), default="paid")
    total_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    refunded_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    payment_method: Mapped[str] = mapped_column(String(40), default="wallet")
    deposit_id: Mapped[uuid.UUID | None] = mapped_column(nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # the buyer's billing details as issued (0016d); NULL on invoices issued before: the current ones show
    billing_company: Mapped[str | None] = mapped_column(String(200), nullable=True)
    billing_address: Mapped[str | None] = mapped_column(String(500), nullable=True)
    billing_vat_id: Mapped[str | None] = mapped_column(String(40), nullable=True)


class InvoiceItem(Base):
    __tablename__ = "invoice_items"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    invoice_id: Mapped[int] = mapped_column(ForeignKey("invoices.id", ondelete="CASCADE"), index=True)
    description: Mapped[str] = mapped_column(String(300))
    quantity: Mapped[int] = mapped_column(Integer, default=1)
    unit_price_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    amount_cents: Mapped[int] = mapped_column(BigInteger, default=0)


class InvoiceCreditNote(Base):
    """Money given back against an invoice (refund of unused time)."""

    __tablename__ = "invoice_credit_notes"

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    invoice_id: Mapped[int] = mapped_column(ForeignKey("invoices.id", ondelete="CASCADE"), index=True)
    description: Mapped[str] = mapped_column(String(300))
    amount_cents: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ServiceRefresh(Base):
    """An IP-list refresh. A free one carries the index of the free window it used (unique per service),
    so two concurrent refreshes can never both be free."""

    __tablename__ = "service_refreshes"
    __table_args__ = (UniqueConstraint("service_id", "free_window", name="uq_service_refreshes_free_window"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(10))  # free | paid
    free_window: Mapped[int | None] = mapped_column(Integer, nullable=True)
    replaced: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)  # [{old, new, country}]
    charged_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    invoice_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class RenewalClaim(Base):
    """One automatic renewal per (service, term end): the unique row is what stops two job workers
    renewing the same term twice."""

    __tablename__ = "renewal_claims"
    __table_args__ = (UniqueConstraint("service_id", "term_end", name="uq_renewal_claims_service_term"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    service_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("services.service_id", ondelete="CASCADE"), index=True
    )
    term_end: Mapped[datetime] = mapped_column(UTCDateTime())
    charged_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    invoice_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
