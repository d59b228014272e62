"""Order and service events, called by domains/orders and domains/services in the caller's transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.events.service import emit, emit_many
from proxyplane.storage.models import Service


def service_data(svc: Service, **extra: Any) -> dict[str, Any]:
    end = svc.current_period_end
    return {
        "service_id": str(svc.service_id),
        "number": svc.number,
        "product_kind": svc.product_kind,
        "status": svc.status,
        "period_months": svc.period_months,
        "segments": list(svc.segments or []),
        "current_period_end": end.isoformat() if end is not None else None,
        **extra,
    }


async def service_event(session: AsyncSession, svc: Service, event_type: str, **extra: Any) -> None:
    await emit(session, svc.customer_id, event_type, service_data(svc, **extra))


def order_items(svc: Service, amount_due_cents: int) -> list[tuple[str, dict[str, Any]]]:
    """The events of a placed order, in order: order.created always; when nothing is left to pay, also
    order.paid and service.activated."""
    base = service_data(svc)  # each event's own dict (and segments list), as service_data per event
    data = {
        **base,
        "total_cents": svc.period_price_cents,
        "wallet_paid_cents": svc.wallet_paid_cents,
        "amount_due_cents": amount_due_cents,
    }
    items = [("order.created", data)]
    if amount_due_cents == 0:
        paid = {**base, "segments": list(base["segments"]), "total_cents": svc.period_price_cents}
        items += [
            ("order.paid", paid),
            ("service.activated", {**base, "segments": list(base["segments"])}),
        ]
    return items


async def order_placed(
    session: AsyncSession, svc: Service, amount_due_cents: int, *, has_endpoints: bool = True
) -> None:
    """order_items in one emit_many (two or three statements)."""
    items = order_items(svc, amount_due_cents)
    await emit_many(session, svc.customer_id, items, has_endpoints=has_endpoints)


async def order_paid(session: AsyncSession, svc: Service) -> None:
    await service_event(session, svc, "order.paid", total_cents=svc.period_price_cents)
    await service_event(session, svc, "service.activated")


async def addon_event(session: AsyncSession, addon: Any, event_type: str, **extra: Any) -> None:
    """addon.activated / addon.cancelled (`addon` is a storage ServiceAddon)."""
    data = {
        "addon_id": str(addon.addon_id),
        "service_id": str(addon.service_id),
        "addon_type": addon.kind,
        "status": addon.status,
        "quantity": addon.quantity,
        "parameters": dict(addon.parameters or {}),
        "paid_through": addon.period_end.isoformat() if addon.period_end is not None else None,
        "invoice_id": str(addon.invoice_id) if addon.invoice_id is not None else None,
        **extra,
    }
    await emit(session, addon.customer_id, event_type, data)
