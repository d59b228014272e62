"""The lean PostgreSQL order statements (issue 15; moved here by issue 31), assembled from the fragments
each table's writer exports: the wallet's debit and ledger entry (repos/wallet.py), the service row and
its whitelist (repos/services.py), the allocation (repos/stock.py), the invoice (repos/invoices.py), the
events and deliveries (repos/events.py). The parameters (texts, event data) are the domain's
(domains/orders/paid_in_full.py, domains/orders/rows.py); off (storage/engine_choice.LEAN) or on SQLite
the orders take their plain paths instead (`available`).

Paid in full (an order the wallet pays in full, the context read saw enough balance): the wallet debit,
the service row, its whitelist and the IPs in ONE statement

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
opened here: `SAVEPOINT x; SELECT set_config(...)` as ONE simple query, one round trip before the
statement): asyncpg prepares it once per connection, but PostgreSQL's `auto` mode kept planning it again
on every execution (~0.8 ms of PostgreSQL CPU per order, `pg_stat_statements`, about a sixth of the
order's database CPU); the generic plan executed no slower. Undone with the savepoint when the order
falls back to the general path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, Uuid, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine_choice import lean
from proxyplane.storage.models import Service
from proxyplane.storage.repos import events, invoices, savepoints, services, wallet
from proxyplane.storage.repos.stock import Allocated, country_column, pick_sql, take_ips_cte
from proxyplane.storage.types import UTCDateTime


def available(session: AsyncSession) -> bool:
    """Whether the lean order statements run in this unit of work (PostgreSQL, lean forms on)."""
    return lean(session)


# paid in full: the debit crossed the balance-low threshold (:low) when the balance before (after + total)
# was at or above it and the balance after is below it
_CROSSED = (
    "NOT e.low OR (w.balance_cents + CAST(:total AS BIGINT) >= CAST(:low AS BIGINT)"
    " AND CAST(:low AS BIGINT) > w.balance_cents)"
)
# with `record`: the invoice (paid from the wallet), its lines, the ledger entry (balance after from `w`) and
# the events, whose JSON texts carry placeholders for the service number and the balance after (known only
# inside the statement); wallet.balance_low only when the debit crossed the threshold (`low`)
_RECORD = (
    ", "
    + invoices.invoice_cte(
        "CAST(:customer_id AS INTEGER), CAST(:service_id AS UUID), 'order',"
        " left(CAST(:i_head AS VARCHAR) || s.number || CAST(:i_tail AS VARCHAR), 500), 'paid',"
        " CAST(:i_total AS BIGINT), 0, 'wallet', NULL, CAST(:now AS TIMESTAMPTZ), CAST(:now AS TIMESTAMPTZ)",
        "s",
        "CAST(:customer_id AS INTEGER)",
    )
    + ", "
    + invoices.ITEMS_CTE
    + ", "
    + wallet.debit_entry_cte(
        "-CAST(:total AS BIGINT)",
        "w.balance_cents",
        "left(CAST(:e_head AS VARCHAR) || s.number || CAST(:e_tail AS VARCHAR), 500)",
        "CAST(inv.id AS VARCHAR)",
        "inv, w, s",
    )
    + ", "
    + events.events_cte(
        "CAST(replace(replace(e.d, CAST(:ph_number AS TEXT), CAST(s.number AS TEXT)),"
        " CAST(:ph_balance AS TEXT), CAST(w.balance_cents AS TEXT)) AS JSON)",
        "s, w, unnest(CAST(:ev_id AS UUID[]), CAST(:ev_type AS VARCHAR[]), CAST(:ev_data AS TEXT[]),"
        " CAST(:ev_at AS TIMESTAMPTZ[]), CAST(:ev_low AS BOOLEAN[])) WITH ORDINALITY AS e(i, t, d, c, low, n)"
        f" WHERE {_CROSSED}",
    )
)
# with deliveries (a customer with enabled webhook endpoints)
_DELIVERIES = ", " + events.deliveries_cte(
    "s, w, unnest(CAST(:ev_id AS UUID[]), CAST(:ev_type AS VARCHAR[]), CAST(:ev_low AS BOOLEAN[]))"
    " WITH ORDINALITY AS e(i, t, low, n)",
    _CROSSED,
)


def _paid_in_full_sql(picks: str, col: str, record: bool, deliveries: bool) -> str:
    return (
        f"WITH {wallet.DEBIT_CTE}, {services.service_ctes('w')},"
        f" {take_ips_cte(picks, col, 's', 'CAST(:service_id AS UUID)', 'CAST(:now AS TIMESTAMPTZ)')}"
        f"{_RECORD if record else ''}{_DELIVERIES if deliveries else ''}"
        " SELECT s.number, w.balance_cents, p.id, p.address, p.port, p.country"
        " FROM s CROSS JOIN w LEFT JOIN picked AS p ON TRUE ORDER BY p.id"
    )


_STATEMENTS: dict[tuple[str, int, bool, bool], DriverStatement] = {}


def _statement(picks: str, col: str, segments: int, record: bool, deliveries: bool) -> DriverStatement:
    """Built once per shape: the geo source's column, the segment count (the picks' SQL depends on
    nothing else; its values are parameters), whether the records and the deliveries are written too."""
    key = (col, segments, record, deliveries)
    stmt = _STATEMENTS.get(key)
    if stmt is None:
        if len(_STATEMENTS) > 2000:  # bounded anyway
            _STATEMENTS.clear()
        bound = text(_paid_in_full_sql(picks, col, record, deliveries)).bindparams(*services.column_binds())
        stmt = _STATEMENTS[key] = DriverStatement(bound)
    return stmt


async def paid_in_full(
    session: AsyncSession,
    svc: Service,
    whitelist: Sequence[str],
    total_cents: int,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
    now: Any,
    record: Mapping[str, Any] | None,
    deliveries: bool,
    *,
    savepoint: str,
) -> tuple[int, list[Allocated]] | None:
    """Open `savepoint` (with the generic plan setting), then the one statement (module docstring):
    `svc`'s column values set (services.fill_defaults), its number set from the row written. `record`:
    the records' parameters (the invoice, lines, ledger entry, events: the debit is counted for the price
    guard here), `deliveries` too. Returns (balance after, the IPs in id order, possibly short), or None
    (nothing written); the caller rolls back to its savepoint in both cases."""
    await savepoints.open_savepoint(session, savepoint, generic_plans=True)
    col = country_column(geo_source)
    wanted = [(c, n) for c, n in segments if n > 0]
    if not wanted:  # nothing to take: the general path (never reached by a validated order)
        return None
    picks, params = pick_sql(wanted, col, postgres=True, wait=False, exclude=False)
    if record is not None:
        params |= record
    params |= services.fill_defaults(svc)
    params |= {"kind": svc.product_kind, "total": total_cents, "wl_ips": list(whitelist), "now": now}
    shape = (len(wanted), record is not None, record is not None and deliveries)
    found = await _statement(picks, col, *shape).rows(session, params)
    if not found:
        return None
    if record is not None:  # the ledger entry is written (a rollback to the savepoint takes it back)
        wallet.counted_statement(session, total_cents)
    svc.number = int(found[0][0])
    ips = [Allocated(int(r[2]), r[3], r[4], r[5]) for r in found if r[2] is not None]
    return int(found[0][1]), ips


# invoice + lines + ledger entry (when the wallet paid a part) + events, one statement
_RECORD_ORDER = DriverStatement(
    text(
        "WITH "
        + invoices.invoice_cte(
            "c.id, c.sid, 'order', CAST(:description AS VARCHAR), CAST(:status AS VARCHAR),"
            " CAST(:total_cents AS BIGINT), 0, CAST(:method AS VARCHAR), CAST(:deposit_id AS UUID), c.now,"
            " CAST(:paid_at AS TIMESTAMPTZ)",
            "(SELECT CAST(:customer_id AS INTEGER) AS id, CAST(:service_id AS UUID) AS sid,"
            " CAST(:now AS TIMESTAMPTZ) AS now) AS c",
            "c.id",
        )
        + ", "
        + invoices.ITEMS_CTE
        + ", "
        + wallet.debit_entry_cte(
            "CAST(:e_amount AS BIGINT)",
            "CAST(:e_balance AS BIGINT)",
            "CAST(:e_description AS VARCHAR)",
            "CAST(inv.id AS VARCHAR)",
            "inv WHERE CAST(:e_amount AS BIGINT) < 0",
        )
        + ", "
        + events.events_cte(
            "e.d",
            "unnest(CAST(:ev_id AS UUID[]), CAST(:ev_type AS VARCHAR[]), CAST(:ev_data AS JSON[]),"
            " CAST(:ev_at AS TIMESTAMPTZ[])) WITH ORDINALITY AS e(i, t, d, c, n)",
        )
        + " SELECT id FROM inv"
    ).bindparams(
        bindparam("customer_id", type_=cast(Table, Service.__table__).c.customer_id.type),
        bindparam("service_id", type_=Uuid()),
        bindparam("deposit_id", type_=Uuid()),
        bindparam("now", type_=UTCDateTime()),
        bindparam("paid_at", type_=UTCDateTime()),
        bindparam("e_now", type_=UTCDateTime()),
    )
)


async def record_order(session: AsyncSession, params: Mapping[str, Any], wallet_cents: int) -> int:
    """The invoice, its lines, the ledger entry of the wallet part (`wallet_cents` > 0: counted for the
    price guard here; params e_amount = -wallet_cents) and the events in one statement; the invoice id."""
    if wallet_cents > 0:
        wallet.counted_statement(session, wallet_cents)
    return int(await _RECORD_ORDER.scalar(session, params))
