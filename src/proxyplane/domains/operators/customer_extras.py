"""More of a customer for the console's customer page and search (issue 33): the invoices, the sign-ins
(never a password; the addresses they came from), the traffic of the last 30 days per service (the
daily usage rollups), and the client addresses a customer is found by (a sign-in's address or a
whitelisted address of one of their services). Reads only."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models import Customer, LoginEvent, Service, ServiceWhitelist
from proxyplane.storage.models.billing import Invoice
from proxyplane.storage.models.usage_rollups import UsageRollup

USAGE_DAYS = 30


def by_client_ip(address: str) -> list[ColumnElement[bool]]:
    """Conditions on Customer: signed in from `address`, or one of their services whitelists it."""
    signed_in = select(LoginEvent.customer_id).where(LoginEvent.client_ip == address)
    whitelisted = (
        select(Service.customer_id)
        .join(ServiceWhitelist, ServiceWhitelist.service_id == Service.service_id)
        .where(ServiceWhitelist.ip == address)
    )
    return [Customer.id.in_(signed_in), Customer.id.in_(whitelisted)]


async def extras(session: AsyncSession, customer_id: int) -> dict[str, Any]:
    invoices = (
        await session.execute(
            select(Invoice).where(Invoice.customer_id == customer_id).order_by(Invoice.id.desc()).limit(50)
        )
    ).scalars()
    sign_ins = (
        await session.execute(
            select(LoginEvent)
            .where(LoginEvent.customer_id == customer_id)
            .order_by(LoginEvent.id.desc())
            .limit(20)
        )
    ).scalars()
    since = utcnow() - timedelta(days=USAGE_DAYS)
    usage = await session.execute(
        select(
            Service.service_id,
            Service.number,
            func.coalesce(func.sum(UsageRollup.bytes_up + UsageRollup.bytes_down), 0),
            func.coalesce(func.sum(UsageRollup.requests), 0),
        )
        .join(UsageRollup, UsageRollup.service_id == Service.service_id)
        .where(Service.customer_id == customer_id, UsageRollup.span == "d", UsageRollup.bucket >= since)
        .group_by(Service.service_id, Service.number)
        .order_by(Service.number.desc())
    )
    return {
        "invoices": [
            {
                "invoice_id": i.id,
                "kind": i.kind,
                "status": i.status,
                "total_cents": i.total_cents,
                "refunded_cents": i.refunded_cents,
                "description": i.description,
                "created_at": i.created_at.isoformat(),
            }
            for i in invoices
        ],
        "sign_ins": [
            {
                "channel": e.channel,
                "client_ip": e.client_ip,
                "user_agent": e.user_agent,
                "success": bool(e.success),
                "created_at": e.created_at.isoformat(),
            }
            for e in sign_ins
        ],
        "usage_days": USAGE_DAYS,
        "usage": [
            {"service_id": str(sid), "number": number, "bytes": int(total), "requests": int(requests)}
            for sid, number, total, requests in usage.all()
        ],
    }
