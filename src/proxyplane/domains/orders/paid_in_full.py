"""PostgreSQL, an order the wallet pays in full (the context read saw enough balance): the wallet debit,
the service row, its whitelist and the IPs in ONE statement (issue 15).

    WITH w AS (UPDATE wallets ... WHERE balance_cents >= total RETURNING balance_cents),
         s AS (INSERT INTO services ... SELECT ... FROM w RETURNING number),
         wl AS (INSERT INTO service_whitelist ... FROM s, unnest(ips)),
         picked AS (UPDATE stock_ips ... WHERE id IN (<allocate's SKIP LOCKED picks>) AND EXISTS s),
         added AS (INSERT INTO service_ips ... FROM picked)
    SELECT number, balance, ip rows FROM s, w LEFT JOIN picked

The same guarded debit as wallet.withdraw (never negative), the same picks, slot check and lock order as
allocate.take (the wallet row first, then the stock rows): nothing is written unless the debit is. No row
back: the balance was short after all (a concurrent debit); one row with no IP: no stock. The caller rolls
back to its savepoint in both cases and continues on the general path (orders.place_order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from sqlalchemy import Table, bindparam, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.orders.rows import fill_defaults
from proxyplane.domains.stock.allocate import Allocated, country_column, pick_sql
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import Service

_SERVICES = cast(Table, Service.__table__)
_COLUMNS = [c for c in _SERVICES.columns if c.key != "number"]
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]


def _sql(picks: str, col: str) -> str:
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
        f" picked AS (UPDATE stock_ips SET assigned_count = assigned_count + 1 WHERE id IN ({picks})"
        f" AND assigned_count < capacity AND EXISTS (SELECT 1 FROM s)"
        f" RETURNING id, address, port, {col} AS country),"
        " added AS (INSERT INTO service_ips (service_id, ip_id, address, port, country, allocated_at)"
        " SELECT CAST(:service_id AS UUID), id, address, port, country, CAST(:now AS TIMESTAMPTZ)"
        " FROM picked ORDER BY id)"
        " SELECT s.number, w.balance_cents, p.id, p.address, p.port, p.country"
        " FROM s CROSS JOIN w LEFT JOIN picked AS p ON TRUE ORDER BY p.id"
    )


_STATEMENTS: dict[tuple[str, int], DriverStatement] = {}


def _statement(picks: str, col: str, segments: int) -> DriverStatement:
    """Built once per shape: the geo source's column and the segment count (the picks' SQL depends on
    nothing else; its values are parameters)."""
    stmt = _STATEMENTS.get((col, segments))
    if stmt is None:
        if len(_STATEMENTS) > 2000:  # bounded anyway
            _STATEMENTS.clear()
        bound = text(_sql(picks, col)).bindparams(*[bindparam(c.key, type_=c.type) for c in _COLUMNS])
        stmt = _STATEMENTS[(col, segments)] = DriverStatement(bound)
    return stmt


async def place(
    session: AsyncSession,
    svc: Service,
    whitelist: Sequence[str],
    total_cents: int,
    geo_source: str,
    segments: Sequence[tuple[str, int]],
) -> tuple[int, list[Allocated]] | None:
    """Debit `total_cents`, write `svc` (settled as paid in full; sets its number) with its whitelist and
    take the IPs of `segments`. Returns (balance after, the IPs in id order, possibly short), or None
    when the balance was short (nothing written)."""
    col = country_column(geo_source)
    wanted = [(c, n) for c, n in segments if n > 0]
    if not wanted:  # nothing to take: the general path (never reached by a validated order)
        return None
    picks, params = pick_sql(wanted, col, postgres=True, wait=False, exclude=False)
    params |= fill_defaults(svc)
    params |= {
        "kind": svc.product_kind,
        "total": total_cents,
        "wl_ips": list(whitelist),
        "now": utcnow(),
    }
    found = await _statement(picks, col, len(wanted)).rows(session, params)
    if not found:
        return None
    svc.number = int(found[0][0])
    ips = [Allocated(int(r[2]), r[3], r[4], r[5]) for r in found if r[2] is not None]
    return int(found[0][1]), ips
