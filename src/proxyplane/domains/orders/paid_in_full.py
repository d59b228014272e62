"""PostgreSQL, an order the wallet pays in full (the context read saw enough balance): the wallet debit,
the service row, its whitelist and the IPs in ONE statement (issue 15).

    WITH w AS (UPDATE wallets ... WHERE balance_cents >= total RETURNING balance_cents),
         s AS (INSERT INTO services ... SELECT ... FROM w RETURNING number),
         wl AS (INSERT INTO service_whitelist ... FROM s, unnest(ips)),
         picked AS (UPDATE stock_ips ... WHERE id = ANY(ARRAY(<allocate's SKIP LOCKED picks>)) AND EXISTS s),
         added AS (INSERT INTO service_ips ... FROM picked)
    SELECT number, balance, ip rows FROM s, w LEFT JOIN picked

The same guarded debit as wallet.withdraw (never negative), the same picks, slot check and lock order as
allocate.take (the wallet row first, then the stock rows): nothing is written unless the debit is. No row
back: the balance was short after all (a concurrent debit); one row with no IP: no stock. The caller rolls
back to its savepoint in both cases and continues on the general path (orders.place_order).

The statement runs with a generic plan (`plan_cache_mode` set for the rest of the caller's savepoint,
which `place` opens: `SAVEPOINT x; SELECT set_config(...)` as ONE simple query, one round trip before the
statement): asyncpg prepares it once per connection, but PostgreSQL's `auto` mode kept planning it again
on every execution (~0.8 ms of PostgreSQL CPU per order, `pg_stat_statements`, about a sixth of the
order's database CPU); the generic plan executed no slower. Undone with the savepoint when the order
falls back to the general path.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, bindparam, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.product_names import humanize
from proxyplane.domains.events import services as service_events
from proxyplane.domains.invoices.service import quote_invoice_lines
from proxyplane.domains.orders.rows import fill_defaults
from proxyplane.domains.pricing import Quote
from proxyplane.domains.stock.allocate import Allocated, country_column, pick_sql, picked_ids
from proxyplane.storage.driver import DriverScript, DriverStatement
from proxyplane.storage.models import Service

_SERVICES = cast(Table, Service.__table__)
_COLUMNS = [c for c in _SERVICES.columns if c.key != "number"]
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]


def _sql(picks: str, col: str, record: bool, deliveries: bool) -> str:
    values = ", ".join(f"CAST(:{c.key} AS {c.type.compile(dialect=_PG)})" for c in _COLUMNS)
    return (
        "WITH w AS (UPDATE wallets SET balance_cents = balance_cents - CAST(:total AS BIGINT)"
        " WHERE customer_id = CAST(:customer_id AS INTEGER) AND balance_cents >= CAST(:total AS BIGINT)"
        " RETURNING balance_cents),"
        f" s AS (INSERT INTO services ({', '.join(c.name for c in _COLUMNS)}) SELECT {values} FROM w"
        " RETURNING number),"
        " wl AS (INSERT INTO service_whitelist (service_id, ip, created_at)"
        " SELECT CAST(:service_id AS UUID), x.ip, CAST(:now AS TIMESTAMPTZ)"
        " FROM s, unnest(CAST(:wl_ips AS VARCHAR[])) WITH ORDINALITY AS x(ip, n) ORDER BY x.n),"
        " picked AS (UPDATE stock_ips SET assigned_count = assigned_count + 1"
        f" WHERE {picked_ids(picks, True)}"
        f" AND assigned_count < capacity AND EXISTS (SELECT 1 FROM s)"
        f" RETURNING id, address, port, {col} AS country),"
        " added AS (INSERT INTO service_ips (service_id, ip_id, address, port, country, allocated_at)"
        " SELECT CAST(:service_id AS UUID), id, address, port, country, CAST(:now AS TIMESTAMPTZ)"
        " FROM picked ORDER BY id)"
        f"{_RECORD if record else ''}{_DELIVERIES if deliveries else ''}"
        " SELECT s.number, w.balance_cents, p.id, p.address, p.port, p.country"
        " FROM s CROSS JOIN w LEFT JOIN picked AS p ON TRUE ORDER BY p.id"
    )


# with `record`: the invoice (paid from the wallet), its lines, the ledger entry (balance after from `w`) and
# the events, whose JSON texts carry placeholders for the service number and the balance after (known only
# inside the statement); wallet.balance_low only when the debit crossed the threshold (`low`)
_RECORD = (
    ", inv AS (INSERT INTO invoices (customer_id, service_id, kind, description, status, total_cents,"
    " refunded_cents, payment_method, deposit_id, created_at, paid_at, billing_company, billing_address,"
    " billing_vat_id)"
    " SELECT CAST(:customer_id AS INTEGER), CAST(:service_id AS UUID), 'order',"
    " left(CAST(:i_head AS VARCHAR) || s.number || CAST(:i_tail AS VARCHAR), 500), 'paid',"
    " CAST(:i_total AS BIGINT), 0, 'wallet', NULL, CAST(:now AS TIMESTAMPTZ), CAST(:now AS TIMESTAMPTZ),"
    " COALESCE(b.company, ''), COALESCE(b.address, ''), COALESCE(b.vat_id, '')"
    " FROM s LEFT JOIN customer_billing_details AS b ON b.customer_id = CAST(:customer_id AS INTEGER)"
    " RETURNING id),"
    " items AS (INSERT INTO invoice_items (invoice_id, description, quantity, unit_price_cents, amount_cents)"
    " SELECT inv.id, l.d, l.q, l.u, l.a FROM inv, unnest(CAST(:l_desc AS VARCHAR[]),"
    " CAST(:l_qty AS INTEGER[]), CAST(:l_unit AS BIGINT[]), CAST(:l_amount AS BIGINT[]))"
    " WITH ORDINALITY AS l(d, q, u, a, n) ORDER BY l.n),"
    " entry AS (INSERT INTO ledger_entries (customer_id, amount_cents, balance_after_cents, kind,"
    " description, service_id, invoice_id, deposit_id, created_at)"
    " SELECT CAST(:customer_id AS INTEGER), -CAST(:total AS BIGINT), w.balance_cents, 'purchase',"
    " left(CAST(:e_head AS VARCHAR) || s.number || CAST(:e_tail AS VARCHAR), 500), CAST(:service_id AS UUID),"
    " CAST(inv.id AS VARCHAR), NULL, CAST(:e_now AS TIMESTAMPTZ) FROM inv, w, s),"
    " ev AS (INSERT INTO events (id, customer_id, type, data, created_at)"
    " SELECT e.i, CAST(:customer_id AS INTEGER), e.t,"
    " CAST(replace(replace(e.d, CAST(:ph_number AS TEXT), CAST(s.number AS TEXT)),"
    " CAST(:ph_balance AS TEXT), CAST(w.balance_cents AS TEXT)) AS JSON), e.c"
    " FROM s, w, unnest(CAST(:ev_id AS UUID[]), CAST(:ev_type AS VARCHAR[]), CAST(:ev_data AS TEXT[]),"
    " CAST(:ev_at AS TIMESTAMPTZ[]), CAST(:ev_low AS BOOLEAN[])) WITH ORDINALITY AS e(i, t, d, c, low, n)"
    " WHERE NOT e.low OR (w.balance_cents + CAST(:total AS BIGINT) >= CAST(:low AS BIGINT)"
    " AND CAST(:low AS BIGINT) > w.balance_cents)"
    " ORDER BY e.n)"
)
# with deliveries (a customer with enabled webhook endpoints): one per (event, subscribed endpoint), in
# event order then endpoint age, as events.emit_many queues them (an empty choice of types means every type)
_DELIVERIES = (
    ", dl AS (INSERT INTO webhook_deliveries (public_id, customer_id, endpoint_id, event_id, status,"
    " attempts, next_attempt_at, created_at)"
    " SELECT gen_random_uuid(), CAST(:customer_id AS INTEGER), ep.id, e.i, 'pending', 0,"
    " CAST(:e_now AS TIMESTAMPTZ), CAST(:e_now AS TIMESTAMPTZ)"
    " FROM s, w, unnest(CAST(:ev_id AS UUID[]), CAST(:ev_type AS VARCHAR[]), CAST(:ev_low AS BOOLEAN[]))"
    " WITH ORDINALITY AS e(i, t, low, n)"
    " JOIN webhook_endpoints AS ep ON ep.customer_id = CAST(:customer_id AS INTEGER) AND ep.enabled"
    " AND (ep.event_types IS NULL OR json_typeof(ep.event_types) <> 'array'"
    " OR json_array_length(ep.event_types) = 0"
    " OR EXISTS (SELECT 1 FROM json_array_elements_text(ep.event_types) AS x(t) WHERE x.t = e.t))"
    " WHERE NOT e.low OR (w.balance_cents + CAST(:total AS BIGINT) >= CAST(:low AS BIGINT)"
    " AND CAST(:low AS BIGINT) > w.balance_cents)"
    " ORDER BY e.n, ep.created_at)"
)
NUMBER = "\x00number\x00"  # placeholders in event data (json.dumps writes them as "\u0000...\u0000")
BALANCE = "\x00balance\x00"
_PH_NUMBER, _PH_BALANCE = json.dumps(NUMBER), json.dumps(BALANCE)

_STATEMENTS: dict[tuple[str, int, bool, bool], DriverStatement] = {}
# for the rest of the savepoint it runs in: see the module docstring
_GENERIC_PLANS = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
_OPEN: dict[str, DriverScript] = {}  # per savepoint name: the savepoint and the setting, one round trip


def _statement(picks: str, col: str, segments: int, record: bool, deliveries: bool) -> DriverStatement:
    """Built once per shape: the geo source's column, the segment count (the picks' SQL depends on
    nothing else; its values are parameters), whether the records and the deliveries are written too."""
    key = (col, segments, record, deliveries)
    stmt = _STATEMENTS.get(key)
    if stmt is None:
        if len(_STATEMENTS) > 2000:  # bounded anyway
            _STATEMENTS.clear()
        bound = text(_sql(picks, col, record, deliveries)).bindparams(
            *[bindparam(c.key, type_=c.type) for c in _COLUMNS]
        )
        stmt = _STATEMENTS[key] = DriverStatement(bound)
    return stmt


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
    opening = _OPEN.get(savepoint)
    if opening is None:
        opening = _OPEN[savepoint] = DriverScript(f"SAVEPOINT {savepoint}", _GENERIC_PLANS)
    await opening.run(session)
    col = country_column(geo_source)
    wanted = [(c, n) for c, n in segments if n > 0]
    if not wanted:  # nothing to take: the general path (never reached by a validated order)
        return None
    picks, params = pick_sql(wanted, col, postgres=True, wait=False, exclude=False)
    if record is not None:
        params |= _record_params(svc, record[0], record[1])
    params |= fill_defaults(svc)
    params |= {
        "kind": svc.product_kind,
        "total": total_cents,
        "wl_ips": list(whitelist),
        "now": utcnow(),
    }
    shape = (len(wanted), record is not None, record is not None and deliveries)
    found = await _statement(picks, col, *shape).rows(session, params)
    if not found:
        return None
    svc.number = int(found[0][0])
    ips = [Allocated(int(r[2]), r[3], r[4], r[5]) for r in found if r[2] is not None]
    return int(found[0][1]), ips
