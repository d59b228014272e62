"""What the operator reads (issue 33): the overview's figures from the ledger, customer search, one
customer's page (never a secret: no password, no key hash, no proxy password), the audit log.

Revenue is net sales: what customers spent from their wallets (every ledger entry that is not a deposit
or an operator adjustment, sign flipped: a purchase debit counts, a refund credit takes it back), by UTC
day. Deposits (cash in) are reported beside it. MRR: each active service's term price over its months, summed
(whole cents, rounded down per service)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, String, cast, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.operators import customer_extras
from proxyplane.storage.models import (
    ApiKey,
    Customer,
    LedgerEntry,
    Service,
    ServiceIp,
    Ticket,
    WebhookDelivery,
)
from proxyplane.storage.models.gateway_health import GatewayNodeConnections, UsageExitError
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses
from proxyplane.storage.models.operators import OperatorAudit
from proxyplane.storage.repos import resellers as reseller_rows

NOT_SALES = ("deposit", "adjustment")


def day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


async def _sales_since(session: AsyncSession, since: datetime) -> list[tuple[datetime, int, str]]:
    rows = await session.execute(
        select(LedgerEntry.created_at, LedgerEntry.amount_cents, LedgerEntry.kind).where(
            LedgerEntry.created_at >= since
        )
    )
    return [(at, int(cents), kind) for at, cents, kind in rows.all()]


async def overview(session: AsyncSession, now: datetime | None = None) -> dict[str, Any]:
    now = now or utcnow()
    today = day_start(now)
    month = today.replace(day=1)
    first_day = today - timedelta(days=29)  # the last 30 days, today included
    entries = await _sales_since(session, min(month, first_day))
    by_day: dict[date, int] = {(first_day + timedelta(days=i)).date(): 0 for i in range(30)}
    revenue_today = revenue_month = revenue_30 = deposits_30 = 0
    for at, cents, kind in entries:
        if kind == "deposit":
            deposits_30 += cents if at >= first_day else 0
            continue
        if kind in NOT_SALES:
            continue
        sale = -cents
        revenue_today += sale if at >= today else 0
        revenue_month += sale if at >= month else 0
        if at >= first_day:
            revenue_30 += sale
            by_day[at.date()] = by_day.get(at.date(), 0) + sale
    kinds = await session.execute(
        select(Service.product_kind, func.count())
        .where(Service.status == "active")
        .group_by(Service.product_kind)
    )
    new_today = await session.scalar(
        select(func.count()).select_from(Customer).where(Customer.created_at >= today)
    )
    new_30 = await session.scalar(
        select(func.count()).select_from(Customer).where(Customer.created_at >= first_day)
    )
    terms = await session.execute(
        select(Service.period_price_cents, Service.period_months).where(Service.status == "active")
    )
    mrr = sum(int(price or 0) // max(1, int(months or 1)) for price, months in terms.all())
    failed_30 = await session.scalar(
        select(func.count())
        .select_from(WebhookDelivery)
        .where(WebhookDelivery.status == "failed", WebhookDelivery.next_attempt_at >= first_day)
    )
    open_tickets = await session.scalar(
        select(func.count()).select_from(Ticket).where(Ticket.status != "closed")
    )
    return {
        "as_of": now.isoformat(),
        "revenue_today_cents": revenue_today,
        "revenue_month_cents": revenue_month,
        "revenue_30_days_cents": revenue_30,
        "deposits_30_days_cents": deposits_30,
        "revenue_by_day": [{"day": d.isoformat(), "cents": c} for d, c in sorted(by_day.items())],
        "active_services": {k: int(n) for k, n in sorted(kinds.all())},
        "new_customers_today": int(new_today or 0),
        "new_customers_30_days": int(new_30 or 0),
        "open_tickets": int(open_tickets or 0),
        "mrr_cents": mrr,
        "failed_webhook_deliveries_30_days": int(failed_30 or 0),
    }


def customer_row(c: Customer) -> dict[str, Any]:
    return {
        "customer_id": c.id,
        "email": c.email,
        "name": c.name,
        "status": c.status,
        "kyc_verified": c.kyc_verified_at is not None,
        "email_verified": c.email_verified_at is not None,
        "partner_discount_percent": c.partner_discount_percent,
        "created_at": c.created_at.isoformat(),
    }


async def search(
    session: AsyncSession, query: str, limit: int = 50, *, reseller_id: int | None = None
) -> list[dict[str, Any]]:
    """Customers whose email or name contains `query`, whose id is it, who own a service with that login,
    to whom that exit IP is allocated now, or who signed in from / whitelisted that client IP; with
    `reseller_id`, among that reseller's customers only."""
    q = query.strip()
    among = [] if reseller_id is None else [Customer.id.in_(reseller_rows.customer_ids(reseller_id))]
    if not q:
        rows = await session.execute(select(Customer).where(*among).order_by(Customer.id.desc()).limit(limit))
        return [customer_row(c) for c in rows.scalars().all()]
    like = f"%{q.lower()}%"
    by_service = select(Service.customer_id).where(Service.login == q)
    by_ip = (
        select(Service.customer_id)
        .join(ServiceIp, ServiceIp.service_id == Service.service_id)
        .where(ServiceIp.address == q, ServiceIp.released_at.is_(None))
    )
    conditions: list[ColumnElement[bool]] = [
        func.lower(Customer.email).like(like),
        func.lower(Customer.name).like(like),
        Customer.id.in_(by_service),
        Customer.id.in_(by_ip),
        *customer_extras.by_client_ip(q),
    ]
    if q.isdigit() and len(q) < 10:
        conditions.append(Customer.id == int(q))
    rows = await session.execute(
        select(Customer).where(or_(*conditions), *among).order_by(Customer.id).limit(limit)
    )
    return [customer_row(c) for c in rows.scalars().all()]


async def customer_page(session: AsyncSession, customer: Customer, balance_cents: int) -> dict[str, Any]:
    services = (
        await session.execute(
            select(Service)
            .where(Service.customer_id == customer.id)
            .order_by(Service.number.desc())
            .limit(100)
        )
    ).scalars()
    ips: dict[str, list[str]] = {}
    for sid, address in await session.execute(
        select(ServiceIp.service_id, ServiceIp.address)
        .join(Service, Service.service_id == ServiceIp.service_id)
        .where(Service.customer_id == customer.id, ServiceIp.released_at.is_(None))
    ):
        ips.setdefault(str(sid), []).append(address)
    ledger = (
        await session.execute(
            select(LedgerEntry)
            .where(LedgerEntry.customer_id == customer.id)
            .order_by(LedgerEntry.id.desc())
            .limit(50)
        )
    ).scalars()
    tickets = (
        await session.execute(
            select(Ticket)
            .where(Ticket.customer_id == customer.id)
            .order_by(Ticket.created_at.desc())
            .limit(50)
        )
    ).scalars()
    keys = (
        await session.execute(
            select(ApiKey).where(ApiKey.customer_id == customer.id).order_by(ApiKey.created_at)
        )
    ).scalars()
    return {
        **customer_row(customer),
        **await customer_extras.extras(session, customer.id),
        "balance_cents": balance_cents,
        "services": [
            {
                "service_id": str(s.service_id),
                "number": s.number,
                "kind": s.product_kind,
                "status": s.status,
                "login": s.login,
                "ips": ips.get(str(s.service_id), []),
                "current_period_end": s.current_period_end.isoformat() if s.current_period_end else None,
            }
            for s in services
        ],
        "ledger": [
            {
                "amount_cents": e.amount_cents,
                "balance_after_cents": e.balance_after_cents,
                "kind": e.kind,
                "description": e.description,
                "created_at": e.created_at.isoformat(),
            }
            for e in ledger
        ],
        "tickets": [
            {
                "ticket_id": str(t.id),
                "subject": t.subject,
                "status": t.status,
                "created_at": t.created_at.isoformat(),
            }
            for t in tickets
        ],
        "api_keys": [  # never the secret nor its hash
            {
                "key_id": str(k.id),
                "name": k.name,
                "scopes": k.scopes,
                "created_at": k.created_at.isoformat(),
                "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
                "revoked": k.revoked_at is not None,
            }
            for k in keys
        ],
    }


async def nodes(session: AsyncSession, now: datetime | None = None) -> dict[str, Any]:
    """Each gateway node as the store last heard of it (its connection report and its address prefixes),
    and the exit errors of the last hour by category."""
    now = now or utcnow()
    found: dict[str, dict[str, Any]] = {}
    for row in (await session.execute(select(GatewayNodeConnections))).scalars():
        found.setdefault(row.node_id, {})
        found[row.node_id].update(
            connections=sum(int(n) for n in (row.counts or {}).values()),
            reported_at=row.updated_at.isoformat(),
            seconds_since_report=int((now - row.updated_at).total_seconds()),
        )
    for addresses in (await session.execute(select(GatewayNodeAddresses))).scalars():
        found.setdefault(addresses.node_id, {})
        found[addresses.node_id].update(
            prefixes=list(addresses.prefixes or []), nonlocal_ips=addresses.nonlocal_ips
        )
    errors = await session.execute(
        select(UsageExitError.category, func.sum(UsageExitError.count))
        .where(UsageExitError.minute >= now - timedelta(hours=1))
        .group_by(UsageExitError.category)
    )
    return {
        "nodes": [{"node_id": k, **v} for k, v in sorted(found.items())],
        "exit_errors_last_hour": {c: int(n or 0) for c, n in errors.all()},
    }


def audit_row(a: OperatorAudit) -> dict[str, Any]:
    return {
        "id": a.id,
        "at": a.at.isoformat(),
        "actor": a.actor,
        "role": a.role,
        "door": a.door,
        "action": a.action,
        "target": a.target,
        "before": a.before,
        "after": a.after,
        "detail": a.detail,
        "client_ip": a.client_ip,
        "outcome": a.outcome,
    }


async def audit(
    session: AsyncSession,
    *,
    actor: str = "",
    action: str = "",
    target: str = "",
    outcome: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    stmt = select(OperatorAudit)
    if outcome:
        stmt = stmt.where(OperatorAudit.outcome == outcome)
    if actor:
        stmt = stmt.where(OperatorAudit.actor == actor)
    if action:
        stmt = stmt.where(OperatorAudit.action == action)
    if target:
        stmt = stmt.where(cast(OperatorAudit.target, String).like(f"%{target}%"))
    if since is not None:
        stmt = stmt.where(OperatorAudit.at >= since)
    if until is not None:
        stmt = stmt.where(OperatorAudit.at < until)
    rows = await session.execute(stmt.order_by(OperatorAudit.id.desc()).limit(limit))
    return [audit_row(a) for a in rows.scalars().all()]
