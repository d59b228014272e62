"""Legacy shapes of the shared records: service status and billing cycle names, service and product
objects. Reads only; the values come from the same rows v1 serves."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.security import SecretBox
from proxyplane.domains.legacy import service as legacy
from proxyplane.domains.legacy.products import GROUPS, LegacyProduct, units
from proxyplane.domains.legacy.wire import Money, date, timestamp
from proxyplane.domains.pricing import PriceBook
from proxyplane.domains.services import service as services
from proxyplane.storage.models import Service

# v1 status -> legacy status. "Fraud" is never produced: v1 has no such service state, and an account an
# operator blocks cannot authenticate here (see docs/decisions/legacy.md "Legacy API").
STATUS = {
    "pending": "Pending",
    "active": "Active",
    "suspended": "Suspended",
    "expired": "Terminated",
    "cancelled": "Cancelled",
}
BILLING_CYCLE = {1: "Monthly", 3: "Quarterly", 6: "Semi-Annually", 12: "Annually"}
ROTATING = "proxy_rotating"


def product_type(kind: str) -> str:
    return "ppr" if kind == ROTATING else "fpr"


def status(svc: Service) -> str:
    return STATUS.get(services.effective_status(svc), "Pending")


def product_name(svc: Service) -> str:
    name = (svc.parameters or {}).get("product_name")
    if name:
        return str(name)
    count = sum(int(s.get("count", 0)) for s in svc.segments or [])
    group = GROUPS.get(svc.product_kind, (0, "Proxies"))[1]
    return f"{group}: {units(svc.product_kind, count)}"


def next_due(svc: Service) -> str | None:
    return date(svc.current_period_end or svc.created_at)


def cycle_price_cents(svc: Service, books: dict[str, PriceBook]) -> int:
    """What one billing cycle of the service costs at renewal (term discount applied)."""
    book = books.get(svc.product_kind)
    percent = book.term_discount_percent(svc.period_months) if book else 0
    return services.renewal_charge_cents(svc.renewal_price_cents, svc.period_months, percent)


def service_list_item(svc: Service) -> dict[str, Any]:
    return {
        "service_id": svc.number,
        "product_name": product_name(svc),
        "nextduedate": next_due(svc),
        "orderid": svc.number,
        "status": status(svc),
    }


async def service_object(
    session: AsyncSession, box: SecretBox, svc: Service, books: dict[str, PriceBook]
) -> dict[str, Any]:
    fpr = svc.product_kind != ROTATING
    out: dict[str, Any] = {
        "service_id": svc.number,
        "orderid": svc.number,
        "product_name": product_name(svc),
        "regdate": date(svc.created_at),
        "nextduedate": next_due(svc),
        "status": status(svc),
        "billingcycle": BILLING_CYCLE.get(svc.period_months, "Monthly"),
        "username": svc.login,
        "password": services.reveal_password(box, svc),
    }
    if fpr:
        out["bindedip"] = await legacy.bound_ip(session, svc.service_id)
    out["product_type"] = product_type(svc.product_kind)
    if fpr:
        out["ip_count"] = len(await services.service_ips(session, svc.service_id))
    out["price"] = Money(cycle_price_cents(svc, books))
    return out


def product_list_item(p: LegacyProduct) -> dict[str, Any]:
    group_id, group_name = GROUPS[p.kind]
    return {
        "productId": p.number,
        "productName": p.name,
        "price": Money(p.price_cents),
        "groupId": group_id,
        "groupName": group_name,
        "created_at": date(p.created_at),
    }


def product_object(p: LegacyProduct) -> dict[str, Any]:
    group_id, group_name = GROUPS[p.kind]
    out: dict[str, Any] = {
        "productId": p.number,
        "price": Money(p.price_cents),
        "groupId": group_id,
        "groupName": group_name,
        "created_at": date(p.created_at),
        "product_hidden": p.hidden,
        "group_hidden": False,
        "product_type": product_type(p.kind),
    }
    if not p.rotating:
        out["ip_count"] = p.ip_count
        out["update_time"] = timestamp(p.update_time)
        out["geo"] = list(p.geo)
    return out
