"""The service record of the v1 API (field names are ours; the seed leaves them open)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.bounds import documented
from proxyplane.core.rotating_gateway import without_stored_gateway
from proxyplane.core.security import SecretBox, mask
from proxyplane.domains.services import service as services
from proxyplane.storage.models import Service


class ServiceIpOut(BaseModel):
    ip: str
    port: int | None = Field(description="null: the gateway's default port")
    country: str


class SegmentOut(BaseModel):
    country: str
    count: int
    region: str | None = Field(default=None, description="the region the IPs were bought in (geo key)")
    city: str | None = Field(default=None, description="the city the IPs were bought in (geo key)")


class ServiceOut(BaseModel):
    service_id: uuid.UUID
    service_number: int = Field(description="numeric id (the legacy API's order / service id)")
    product_kind: str
    product_id: uuid.UUID | None
    status: str = Field(
        description="pending, active, suspended, expired or cancelled",
        json_schema_extra=documented(enum=["pending", "active", "suspended", "expired", "cancelled"]),
    )
    period_months: int
    geo_source: str
    segments: list[SegmentOut]
    ip_count: int
    ips: list[ServiceIpOut]
    login: str
    password: str = Field(description="masked; reveal with GET .../proxy/auth?reveal=true")
    whitelist_ips: list[str]
    max_connections: int
    auto_renew: bool
    renewal_price_cents: int = Field(description="monthly price used for renewals (before term discount)")
    period_price_cents: int = Field(description="price paid for the current term")
    amount_due_cents: int = Field(description="still to pay at the processor checkout (pending orders)")
    started_at: datetime | None
    current_period_start: datetime | None
    expires_at: datetime | None = Field(description="end of the current paid term")
    cancelled_at: datetime | None
    created_at: datetime
    parameters: dict[str, Any]


async def service_out(
    session: AsyncSession,
    box: SecretBox,
    svc: Service,
    *,
    ips: Sequence[Any] | None = None,
    whitelist: Sequence[str] | None = None,
    password: str | None = None,
) -> ServiceOut:
    """`ips` (objects with address, port, country), `whitelist` and the plain `password`: given when the
    caller has just written them (an order: no decrypt of what it has just encrypted), else read."""
    if ips is None:
        ips = await services.service_ips(session, svc.service_id)
    return ServiceOut(
        service_id=svc.service_id,
        service_number=svc.number,
        product_kind=svc.product_kind,
        product_id=svc.product_id,
        status=services.effective_status(svc),
        period_months=svc.period_months,
        geo_source=svc.geo_source,
        segments=[SegmentOut(**s) for s in svc.segments or []],
        ip_count=len(ips),
        ips=[{"ip": i.address, "port": i.port, "country": i.country} for i in ips],  # type: ignore[misc]
        login=svc.login,
        password=mask(password) if password is not None else services.masked_password(box, svc),
        whitelist_ips=list(whitelist)
        if whitelist is not None
        else await services.whitelist(session, svc.service_id),
        max_connections=svc.max_connections,
        auto_renew=svc.auto_renew,
        renewal_price_cents=svc.renewal_price_cents,
        period_price_cents=svc.period_price_cents,
        amount_due_cents=svc.amount_due_cents,
        started_at=svc.started_at,
        current_period_start=svc.current_period_start,
        expires_at=svc.current_period_end,
        cancelled_at=svc.cancelled_at,
        created_at=svc.created_at,
        parameters=without_stored_gateway(svc.parameters),
    )
