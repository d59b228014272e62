"""The rows an order writes, each write one definition per dialect, chosen here (issue 15).

PostgreSQL merges round trips with data-modifying CTEs: the service row and its whitelist are one
statement (`insert_service`); the invoice, its lines, the ledger entry of the wallet part and the order's
events are one statement (`record_order`), the invoice id feeding the lines and the ledger entry inside
it. SQLite has no data-modifying CTEs: its own statements (service INSERT + whitelist executemany;
invoices/orders.record_order, wallet.record_withdrawal, events order_placed). Every statement is built
once per process and run on the driver connection (storage/driver.py).

The service row never enters the ORM session: the order's Service object stays transient (the result's
view of the row, read by the response), so the commit has nothing to walk; what changes the row later in
the order (the deposit of a checkout, the settlement of the waiting path) writes it with `update_service`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Uuid, bindparam, insert, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize
from proxyplane.domains.apikeys import caps
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices import orders as order_invoice
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.orders.context import OrderContext
from proxyplane.domains.pricing import Quote
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import Service, ServiceWhitelist
from proxyplane.storage.types import UTCDateTime

_SERVICES = cast(Table, Service.__table__)
_COLUMNS = [c for c in _SERVICES.columns if c.key != "number"]

# SQLite: the service row, then its whitelist in one executemany
_INSERT_SERVICE = DriverStatement(insert(_SERVICES).returning(_SERVICES.c.number))
_INSERT_WHITELIST = DriverStatement(insert(cast(Table, ServiceWhitelist.__table__)))

# PostgreSQL: both in one statement, the whitelist from one array parameter (in the given order)
_INSERT_SERVICE_PG = DriverStatement(
    text(
        f"WITH s AS (INSERT INTO services ({', '.join(c.name for c in _COLUMNS)})"
        f" VALUES ({', '.join(':' + c.key for c in _COLUMNS)}) RETURNING number),"
        " w AS (INSERT INTO service_whitelist (service_id, ip, created_at)"
        " SELECT CAST(:service_id AS UUID), ip, CAST(:wl_now AS TIMESTAMPTZ)"
        " FROM unnest(CAST(:wl_ips AS VARCHAR[])) WITH ORDINALITY AS w(ip, n) ORDER BY n)"
        " SELECT number FROM s"
    ).bindparams(
        *[bindparam(c.key, type_=c.type) for c in _COLUMNS], bindparam("wl_now", type_=UTCDateTime())
    )
)


def fill_defaults(svc: Service) -> dict[str, Any]:
    """Every column's value (the model's Python-side defaults where the object has none, else NULL, as
    the ORM's flush would), set on the object too so the result reads them."""
    state = svc.__dict__
    for column in _COLUMNS:
        if column.key not in state:
            default = column.default
            if default is None:
                value = None
            else:
                value = default.arg(None) if default.is_callable else default.arg  # type: ignore[attr-defined]
            setattr(svc, column.key, value)
    return {c.key: state[c.key] for c in _COLUMNS}


async def insert_service(
    session: AsyncSession, svc: Service, whitelist: Sequence[str], postgres: bool
) -> None:
    """The service row and its whitelist; sets `svc.number`. `svc` stays out of the session."""
    values = fill_defaults(svc)
    now = utcnow()
    if postgres:
        values["wl_now"], values["wl_ips"] = now, list(whitelist)
        svc.number = int(await _INSERT_SERVICE_PG.scalar(session, values))
        return
    svc.number = int(await _INSERT_SERVICE.scalar(session, values))
    await _INSERT_WHITELIST.many(
        session, [{"service_id": svc.service_id, "ip": ip, "created_at": now} for ip in whitelist]
    )


_UPDATES: dict[frozenset[str], DriverStatement] = {}
_ON_UPDATE = [c for c in _COLUMNS if c.onupdate is not None]


async def update_service(session: AsyncSession, svc: Service, *keys: str) -> None:
    """Write the named columns of the (transient) service object to its row (and the columns the ORM
    stamps on every UPDATE, `updated_at`)."""
    for column in _ON_UPDATE:
        default = column.onupdate
        setattr(svc, column.key, default.arg(None) if default.is_callable else default.arg)  # type: ignore[union-attr]
    keys = (*keys, *(c.key for c in _ON_UPDATE))
    shape = frozenset(keys)
    stmt = _UPDATES.get(shape)
    if stmt is None:
        stmt = _UPDATES[shape] = DriverStatement(
            update(_SERVICES)
            .where(_SERVICES.c.service_id == bindparam("sid", type_=Uuid()))
            .values({k: bindparam(k, type_=_SERVICES.c[k].type) for k in sorted(shape)})
        )
    await stmt.rows(session, {"sid": svc.service_id, **{k: getattr(svc, k) for k in keys}})


# PostgreSQL: invoice + lines + ledger entry (when the wallet paid a part) + events, one statement
_RECORD_PG = DriverStatement(
    text(
        "WITH inv AS (INSERT INTO invoices (customer_id, service_id, kind, description, status, total_cents,"
        " refunded_cents, payment_method, deposit_id, created_at, paid_at, billing_company, billing_address,"
        " billing_vat_id)"
        " SELECT c.id, c.sid, 'order', CAST(:description AS VARCHAR), CAST(:status AS VARCHAR),"
        " CAST(:total_cents AS BIGINT), 0, CAST(:method AS VARCHAR), CAST(:deposit_id AS UUID), c.now,"
        " CAST(:paid_at AS TIMESTAMPTZ), COALESCE(b.company, ''), COALESCE(b.address, ''),"
        " COALESCE(b.vat_id, '')"
        " FROM (SELECT CAST(:customer_id AS INTEGER) AS id, CAST(:service_id AS UUID) AS sid,"
        " CAST(:now AS TIMESTAMPTZ) AS now) AS c"
        " LEFT JOIN customer_billing_details AS b ON b.customer_id = c.id"
        " RETURNING id),"
        " items AS (INSERT INTO invoice_items (invoice_id, description, quantity, unit_price_cents,"
        " amount_cents)"
        " SELECT inv.id, l.d, l.q, l.u, l.a FROM inv, unnest(CAST(:l_desc AS VARCHAR[]),"
        " CAST(:l_qty AS INTEGER[]), CAST(:l_unit AS BIGINT[]), CAST(:l_amount AS BIGINT[]))"
        " WITH ORDINALITY AS l(d, q, u, a, n) ORDER BY l.n),"
        " entry AS (INSERT INTO ledger_entries (customer_id, amount_cents, balance_after_cents, kind,"
        " description, service_id, invoice_id, deposit_id, created_at)"
        " SELECT CAST(:customer_id AS INTEGER), CAST(:e_amount AS BIGINT), CAST(:e_balance AS BIGINT),"
        " 'purchase', CAST(:e_description AS VARCHAR), CAST(:service_id AS UUID), CAST(inv.id AS VARCHAR),"
        " NULL, CAST(:e_now AS TIMESTAMPTZ) FROM inv WHERE CAST(:e_amount AS BIGINT) < 0),"
        " ev AS (INSERT INTO events (id, customer_id, type, data, created_at)"
        " SELECT e.i, CAST(:customer_id AS INTEGER), e.t, e.d, e.c FROM unnest(CAST(:ev_id AS UUID[]),"
        " CAST(:ev_type AS VARCHAR[]), CAST(:ev_data AS JSON[]), CAST(:ev_at AS TIMESTAMPTZ[]))"
        " WITH ORDINALITY AS e(i, t, d, c, n) ORDER BY e.n)"
        " SELECT id FROM inv"
    ).bindparams(
        bindparam("customer_id", type_=_SERVICES.c.customer_id.type),
        bindparam("service_id", type_=Uuid()),
        bindparam("deposit_id", type_=Uuid()),
        bindparam("now", type_=UTCDateTime()),
        bindparam("paid_at", type_=UTCDateTime()),
        bindparam("e_now", type_=UTCDateTime()),
    )
)


def order_description(svc: Service, quote: Quote) -> str:
    """The text of the order's ledger entry; its invoice's is the same, humanized."""
    return f"Order #{svc.number}: {quote.ip_count} {quote.product_kind} IPs, {quote.period_months} month(s)"


def payment_method(wallet_cents: int, due_cents: int, checkout_method: str) -> str:
    if due_cents == 0:
        return "wallet"
    return f"wallet + {checkout_method}" if wallet_cents else checkout_method


async def record_order_pg(
    session: AsyncSession,
    svc: Service,
    quote: Quote,
    wallet_cents: int,
    balance_after_cents: int,
    due_cents: int,
    checkout_method: str,
    deposit_id: uuid.UUID | None,
    events: Sequence[tuple[str, dict[str, Any], datetime]],
) -> int:
    """PostgreSQL: the invoice (as invoices/orders.record_order), its lines, the ledger entry of the
    wallet part (as wallet.record_withdrawal writes it, linked to the invoice) and the events (as
    events.emit_many, for a customer without enabled webhook endpoints) in one statement. Returns the
    invoice id. The caller has done what record_withdrawal does besides the INSERT (cap, price guard)."""
    now = utcnow()
    lines = quote_invoice_lines(quote)
    description = humanize(order_description(svc, quote))
    ledger_text = order_description(svc, quote)  # the ledger keeps the kind id (as wallet.debit's callers)
    invoice_id = await _RECORD_PG.scalar(
        session,
        {
            "customer_id": svc.customer_id,
            "service_id": svc.service_id,
            "description": description[:500],
            "status": "paid" if due_cents == 0 else "open",
            "total_cents": sum(line.amount_cents for line in lines),
            "method": payment_method(wallet_cents, due_cents, checkout_method),
            "deposit_id": deposit_id if due_cents else None,
            "now": now,
            "paid_at": now if due_cents == 0 else None,
            "l_desc": [line.description[:300] for line in lines],
            "l_qty": [line.quantity for line in lines],
            "l_unit": [line.unit_price_cents for line in lines],
            "l_amount": [line.amount_cents for line in lines],
            "e_amount": -wallet_cents,
            "e_balance": balance_after_cents,
            "e_description": ledger_text[:500],
            "e_now": utcnow(),
            "ev_id": [uuid.uuid4() for _ in events],
            "ev_type": [event_type for event_type, _, _ in events],
            "ev_data": [json.dumps(data) for _, data, _ in events],
            "ev_at": [at for _, _, at in events],
        },
    )
    return int(invoice_id)


async def record(
    session: AsyncSession,
    ctx: OrderContext,
    svc: Service,
    quote: Quote,
    taken: wallet.Withdrawal | None,
    due: int,
    payment_method: str,
    postgres: bool,
) -> None:
    """The invoice, the ledger entry of the wallet part and the events of an order not written by
    paid_in_full. PostgreSQL, customer without enabled webhook endpoints: one statement
    (record_order_pg); else the separate writes (SQLite, or deliveries to queue)."""
    paid = taken.cents if taken else 0
    if postgres and not ctx.has_webhooks:
        events: list[tuple[str, dict[str, Any], datetime]] = []
        if taken is not None and taken.cents > 0:
            if ctx.capped_key:
                await caps.charge(session, taken.cents)
            call_context(session).debited_cents += taken.cents
            low = ctx.balance_low_threshold_cents
            if low is not None and taken.balance_after_cents + taken.cents >= low > taken.balance_after_cents:
                data = {"balance_cents": taken.balance_after_cents, "threshold_cents": low}
                events.append(("wallet.balance_low", data, utcnow()))
        events += [(kind, data, utcnow()) for kind, data in service_events.order_items(svc, due)]
        await record_order_pg(
            session,
            svc,
            quote,
            paid,
            taken.balance_after_cents if taken else 0,
            due,
            payment_method,
            svc.deposit_id,
            events,
        )
        return
    invoice_id = await order_invoice.record_order(
        session, svc, quote, paid, due, payment_method, svc.deposit_id
    )
    if taken is not None:
        await wallet.record_withdrawal(
            session,
            svc.customer_id,
            taken,
            "purchase",
            order_description(svc, quote),
            service_id=svc.service_id,
            invoice_id=str(invoice_id),
            capped_key=ctx.capped_key,
            balance_low_threshold=(ctx.balance_low_threshold_cents,),
        )
    await service_events.order_placed(session, svc, due, has_endpoints=ctx.has_webhooks)
