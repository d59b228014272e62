"""An order the wallet pays in full (the context read saw enough balance), on the lean PostgreSQL path:
the wallet debit, the service row, its whitelist, the IPs and (a key without caps) the invoice, ledger
entry, events and deliveries in ONE statement (issue 15). The statement, its savepoint and the price
guard's count are storage's (storage/repos/orders.paid_in_full); here: what it writes (texts, events).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.pricing import Quote
from proxyplane.domains.stock.allocate import Allocated
from proxyplane.storage.models import Service
from proxyplane.storage.repos import orders as repo

NUMBER = "\x00number\x00"  # placeholders in event data (json.dumps writes them as "\u0000...\u0000")
BALANCE = "\x00balance\x00"
_PH_NUMBER, _PH_BALANCE = json.dumps(NUMBER), json.dumps(BALANCE)


def _record_params(svc: Service, quote: Quote, low: int | None) -> dict[str, Any]:
    """The records' parameters: texts split around the service number, the events' JSON with
    placeholders (the number is set to NUMBER while they are built)."""
    lines = quote_invoice_lines(quote)
    tail = f": {quote.ip_count} {quote.product_kind} IPs, {quote.period_months} month(s)"
    svc.__dict__["number"] = NUMBER
    try:
        items = service_events.order_items(svc, 0)
    finally:
        del svc.__dict__["number"]
    events: list[tuple[str, dict[str, Any], bool]] = []
    if low is not None:
        events.append(("wallet.balance_low", {"balance_cents": BALANCE, "threshold_cents": low}, True))
    events += [(kind, data, False) for kind, data in items]
    return {
        "i_head": "Order #",
        "i_tail": humanize(tail),  # humanize(head + number + tail): the number holds no kind id
        "i_total": sum(line.amount_cents for line in lines),
        "l_desc": [line.description[:300] for line in lines],
        "l_qty": [line.quantity for line in lines],
        "l_unit": [line.unit_price_cents for line in lines],
        "l_amount": [line.amount_cents for line in lines],
        "e_head": "Order #",
        "e_tail": tail,
        "e_now": utcnow(),
        "ph_number": _PH_NUMBER,
        "ph_balance": _PH_BALANCE,
        "ev_id": [uuid.uuid4() for _ in events],
        "ev_type": [kind for kind, _, _ in events],
        "ev_data": [json.dumps(data) for _, data, _ in events],
        "ev_at": [utcnow() for _ in events],
        "ev_low": [is_low for _, _, is_low in events],
        "low": low,
    }


async def place(
    session: AsyncSession,
    svc: Service,
    whitelist: Sequence[str],
    total_cents: int,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    record: tuple[Quote, int | None] | None = None,
    deliveries: bool = False,
    *,
    savepoint: str,
) -> tuple[int, list[Allocated]] | None:
    """Open the caller's `savepoint` (the generic plan's setting in it, one round trip), then debit
    `total_cents`, write `svc` (settled as paid in full; sets its number) with its whitelist and take the
    IPs of `segments`; with `record` (the quote, the balance-low threshold) also the invoice, its
    lines, the ledger entry and the events (a key without caps), and with `deliveries` (the customer has
    enabled webhook endpoints) their deliveries.
    Returns (balance after, the IPs in id order, possibly short), or None when the balance was short
    (nothing written); the caller rolls back to its savepoint in both cases."""
    params = _record_params(svc, record[0], record[1]) if record is not None else None
    return await repo.paid_in_full(
        session,
        svc,
        whitelist,
        total_cents,
        geo_source,
        segments,
        utcnow(),
        params,
        deliveries,
        savepoint=savepoint,
    )
