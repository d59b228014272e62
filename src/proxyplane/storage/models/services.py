"""Services (what a customer bought), their IP allocations and whitelist, the catalog, and the
operator's price-book overrides.

A service has two ids: `service_id` (UUID, the v1 API id) and `number` (integer primary key, the legacy
API's numeric order / service id). Child tables reference `services.service_id`.

Status (v1): pending -> active -> expired | cancelled; pending -> cancelled (checkout declined or
expired); active <-> suspended (operator). See docs/decisions/orders-stock.md."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.base import Base
from proxyplane.storage.types import BigIntPK, UTCDateTime

SERVICE_STATUSES: tuple[str, ...] = ("pending", "active", "suspended", "expired", "cancelled")
LIVE_STATUSES: tuple[str, ...] = ("pending", "active", "suspended")  # hold IPs


class CatalogProduct(Base):
    """A fixed product sold from the catalog (POST /customer/services), e.g. a rotating plan."""

    __tablename__ = "catalog_products"

    product_id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(String(1000), default="")
    # proxy_datacenter | proxy_isp | proxy_personal | proxy_rotating
    kind: Mapped[str] = mapped_column(String(30))
    price_cents: Mapped[int] = mapped_column(BigInteger)  # per period, before partner discount
    period_months: Mapped[int] = mapped_column(Integer, default=1)
    # JSON Schema (subset: type object, properties with type/enum/minimum/maximum, required) of the
    # `parameters` a buyer sends
    parameters_schema: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # what the product grants: {"ip_count": 5, "country": "US", "geo_source": "maxmind"} for proxies;
    # {"plan": "bandwidth"|"requests", "quota": int, "exit_pool": "proxy_datacenter"} for rotating (a
    # "gateway" copy stored by older seeds is ignored: connection details come from the settings)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    max_connections: Mapped[int] = mapped_column(Integer, default=100)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    sort_order: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Service(Base):
    __tablename__ = "services"
    __table_args__ = (
        CheckConstraint("period_months IN (1, 3, 6, 12)", name="period"),
        CheckConstraint("amount_due_cents >= 0", name="amount_due"),
        Index("ix_services_customer_status", "customer_id", "status"),
        Index("ix_services_status_end", "status", "current_period_end"),
        # POST /customer/services: one live service per (customer, product, parameters)
        UniqueConstraint("customer_id", "purchase_key", name="uq_services_customer_purchase_key"),
    )

    number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)  # legacy numeric id
    service_id: Mapped[uuid.UUID] = mapped_column(unique=True, default=uuid.uuid4)
    # no index of its own: the (customer_id, ...) indexes serve it (migration 0022p)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id", ondelete="CASCADE"))
    product_kind: Mapped[str] = mapped_column(
        String(30)
    )  # proxy_datacenter|proxy_isp|proxy_personal|proxy_rotating
    product_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("catalog_products.product_id", ondelete="SET NULL"), nullable=True
    )
    status: Mapped[str] = mapped_column(String(20), default="pending")
    period_months: Mapped[int] = mapped_column(Integer, default=1)
    geo_source: Mapped[str] = mapped_column(String(10), default="maxmind")
    segments: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)  # [{"country","count"}]
    parameters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # catalog parameters / config
    purchase_key: Mapped[str | None] = mapped_column(String(64), nullable=True)  # catalog dedupe hash
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)  # first activation
    current_period_start: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    current_period_end: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)  # expires
    auto_renew: Mapped[bool] = mapped_column(Boolean, default=False)
    renewal_price_cents: Mapped[int] = mapped_column(BigInteger, default=0)  # 1-month price of the service
    # money of the current term: what it cost in total, paid from the wallet, and still due at checkout
    period_price_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    wallet_paid_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    amount_due_cents: Mapped[int] = mapped_column(BigInteger, default=0)
    deposit_id: Mapped[uuid.UUID | None] = mapped_column(nullable=True, unique=True)  # checkout of the rest
    login: Mapped[str] = mapped_column(String(64), unique=True)
    password_enc: Mapped[str] = mapped_column(String(500))  # platform.secrets (SecretBox) ciphertext
    max_connections: Mapped[int] = mapped_column(Integer, default=100)
    cancelled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)


class ServiceIp(Base):
    """One exit IP allocated to a service. Live while `released_at` is null."""

    __tablename__ = "service_ips"
    __table_args__ = (UniqueConstraint("service_id", "ip_id", name="uq_service_ips_service_ip"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # no index of its own: uq_service_ips_service_ip (service_id, ip_id) serves it (migration 0022p)
    service_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("services.service_id", ondelete="CASCADE"))
    # PostgreSQL: both references are checked by per-statement triggers, not foreign keys (0024p)
    ip_id: Mapped[int] = mapped_column(ForeignKey("stock_ips.id"), index=True)
    address: Mapped[str] = mapped_column(String(45))
    port: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None: the gateway's default port
    country: Mapped[str] = mapped_column(String(2))  # by the service's geo source
    allocated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    released_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ServiceWhitelist(Base):
    """A client IPv4 address allowed to use the service without login/password."""

    __tablename__ = "service_whitelist"
    __table_args__ = (UniqueConstraint("service_id", "ip", name="uq_service_whitelist_service_ip"),)

    id: Mapped[int] = mapped_column(BigIntPK, primary_key=True, autoincrement=True)
    # no index of its own: uq_service_whitelist_service_ip (service_id, ip) serves it (migration 0023p)
    service_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("services.service_id", ondelete="CASCADE"))
    ip: Mapped[str] = mapped_column(String(45))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class PriceBookOverride(Base):
    """Operator overrides of a product kind's price book: a partial dict layered over DEFAULT_PRICEBOOKS."""

    __tablename__ = "pricebook_overrides"

    product_kind: Mapped[str] = mapped_column(String(30), primary_key=True)
    overrides: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
