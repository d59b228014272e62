"""The operator's orders and services list (issue 33): every order makes one service row (its invoice and
IPs hang off it), so "orders" and "services" are one list, newest first, filtered by customer (id,
email or service login), status, product kind, catalog product, exit-IP country, creation day, expiring
soon (live, with a term ending within N days) or unpaid (pending with an amount due at checkout).
Never a secret: no proxy password."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import product_name
from proxyplane.storage.models import CatalogProduct, Customer, Service, ServiceIp
from proxyplane.storage.repos import resellers as reseller_rows

EXPIRING = ("active", "suspended")


def _day(d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=UTC)


async def _customer_ids(session: AsyncSession, customer: str) -> ColumnElement[bool]:
    q = customer.strip()
    conditions: list[ColumnElement[bool]] = [Service.login == q]
    if q.isdigit():
        conditions.append(Service.customer_id == int(q))
    if "@" in q:
        by_email = select(Customer.id).where(func.lower(Customer.email) == q.lower())
        conditions.append(Service.customer_id.in_(by_email))
    return or_(*conditions)


async def services(
    session: AsyncSession,
    *,
    customer: str = "",
    status: str = "",
    kind: str = "",
    product_id: uuid.UUID | None = None,
    country: str = "",
    created_since: date | None = None,
    created_until: date | None = None,
    expiring_within_days: int | None = None,
    unpaid: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
    reseller_id: int | None = None,
) -> dict[str, Any]:
    now = now or utcnow()
    where: list[ColumnElement[bool]] = []
    if reseller_id is not None:  # a reseller's own customers only
        where.append(Service.customer_id.in_(reseller_rows.customer_ids(reseller_id)))
    if customer.strip():
        where.append(await _customer_ids(session, customer))
    if status:
        where.append(Service.status == status)
    if kind:
        where.append(Service.product_kind == kind)
    if product_id is not None:
        where.append(Service.product_id == product_id)
    if country:
        live_in = select(ServiceIp.service_id).where(
            ServiceIp.country == country.upper(), ServiceIp.released_at.is_(None)
        )
        where.append(Service.service_id.in_(live_in))
    if created_since is not None:
        where.append(Service.created_at >= _day(created_since))
    if created_until is not None:  # the whole day included
        where.append(Service.created_at < _day(created_until) + timedelta(days=1))
    if expiring_within_days is not None:
        where += [
            Service.status.in_(EXPIRING),
            Service.current_period_end >= now,
            Service.current_period_end <= now + timedelta(days=expiring_within_days),
        ]
    if unpaid:
        where += [Service.status == "pending", Service.amount_due_cents > 0]
    total = (await session.execute(select(func.count()).select_from(Service).where(*where))).scalar_one()
    rows = (
        await session.execute(
            select(Service, Customer.email, CatalogProduct.name)
            .join(Customer, Customer.id == Service.customer_id)
            .outerjoin(CatalogProduct, CatalogProduct.product_id == Service.product_id)
            .where(*where)
            .order_by(Service.number.desc())
            .limit(limit)
            .offset(offset)
        )
    ).all()
    ids = [s.service_id for s, _, _ in rows]
    ips: dict[uuid.UUID, list[str]] = {}
    countries: dict[uuid.UUID, set[str]] = {}
    if ids:
        found = await session.execute(
            select(ServiceIp.service_id, ServiceIp.address, ServiceIp.country).where(
                ServiceIp.service_id.in_(ids), ServiceIp.released_at.is_(None)
            )
        )
        for sid, address, where_ in found:
            ips.setdefault(sid, []).append(address)
            countries.setdefault(sid, set()).add(where_)
    items = [
        {
            "service_id": str(s.service_id),
            "number": s.number,
            "customer_id": s.customer_id,
            "customer_email": email,
            "kind": s.product_kind,
            "product": product or product_name(s.product_kind),
            "status": s.status,
            "login": s.login,
            "ip_count": len(ips.get(s.service_id, [])),
            "countries": sorted(countries.get(s.service_id, set())),
            "period_months": s.period_months,
            "period_price_cents": s.period_price_cents,
            "amount_due_cents": s.amount_due_cents,
            "auto_renew": s.auto_renew,
            "created_at": s.created_at.isoformat(),
            "current_period_end": s.current_period_end.isoformat() if s.current_period_end else None,
        }
        for s, email, product in rows
    ]
    return {"items": items, "total": int(total), "limit": limit, "offset": offset}
