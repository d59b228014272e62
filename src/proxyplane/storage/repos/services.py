"""An order's writes of `services` and `service_whitelist` (issue 31: moved from domains/orders/rows.py),
and the whitelist's single adds and removals (domains/proxy/service.py).

The service row never enters the ORM session: the order's Service object stays transient (the result's
view of the row, read by the response), so the commit has nothing to walk; what changes the row later in
the order (the deposit of a checkout, the settlement of the waiting path) writes it with `update_service`.
PostgreSQL, lean (storage/engine_choice.py): the row and its whitelist in one statement; plain (SQLite, or
the lean forms off): the service INSERT, then the whitelist in one executemany. Every statement is built
once per process and run on the driver connection (storage/driver.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Uuid, bindparam, delete, insert, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.engine_choice import is_postgres, lean
from proxyplane.storage.models import Service, ServiceWhitelist
from proxyplane.storage.rowcount import rowcount
from proxyplane.storage.types import UTCDateTime

_SERVICES = cast(Table, Service.__table__)
COLUMNS = [c for c in _SERVICES.columns if c.key != "number"]  # every column the INSERT names
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]

# plain: the service row, then its whitelist in one executemany
_INSERT_SERVICE = DriverStatement(insert(_SERVICES).returning(_SERVICES.c.number))
_INSERT_WHITELIST = DriverStatement(insert(cast(Table, ServiceWhitelist.__table__)))


def _whitelist_cte(name: str, sources: str, now: str) -> str:
    return (
        f"{name} AS (INSERT INTO service_whitelist (service_id, ip, created_at)"
        f" SELECT CAST(:service_id AS UUID), x.ip, {now}"
        f" FROM {sources}unnest(CAST(:wl_ips AS VARCHAR[])) WITH ORDINALITY AS x(ip, n) ORDER BY x.n)"
    )


# lean (PostgreSQL): both in one statement, the whitelist from one array parameter (in the given order)
_INSERT_SERVICE_PG = DriverStatement(
    text(
        f"WITH s AS (INSERT INTO services ({', '.join(c.name for c in COLUMNS)})"
        f" VALUES ({', '.join(':' + c.key for c in COLUMNS)}) RETURNING number),"
        f" {_whitelist_cte('w', '', 'CAST(:wl_now AS TIMESTAMPTZ)')}"
        " SELECT number FROM s"
    ).bindparams(*[bindparam(c.key, type_=c.type) for c in COLUMNS], bindparam("wl_now", type_=UTCDateTime()))
)


def service_ctes(paid_from: str) -> str:
    """The lean order statement's service row (CTE `s`, RETURNING number, written only when `paid_from`,
    a CTE name, has a row) and its whitelist (CTE `wl`): parameters are the column keys, :wl_ips, :now."""
    values = ", ".join(f"CAST(:{c.key} AS {c.type.compile(dialect=_PG)})" for c in COLUMNS)
    return (
        f"s AS (INSERT INTO services ({', '.join(c.name for c in COLUMNS)}) SELECT {values} FROM {paid_from}"
        " RETURNING number),"
        f" {_whitelist_cte('wl', 's, ', 'CAST(:now AS TIMESTAMPTZ)')}"
    )


def column_binds() -> list[Any]:
    """The typed bind parameters of `service_ctes`' column values."""
    return [bindparam(c.key, type_=c.type) for c in COLUMNS]


def fill_defaults(svc: Service) -> dict[str, Any]:
    """Every column's value (the model's Python-side defaults where the object has none, else NULL, as
    the ORM's flush would), set on the object too so the result reads them."""
    state = svc.__dict__
    for column in COLUMNS:
        if column.key not in state:
            default = column.default
            if default is None:
                value = None
            else:
                value = default.arg(None) if default.is_callable else default.arg  # type: ignore[attr-defined]
            setattr(svc, column.key, value)
    return {c.key: state[c.key] for c in COLUMNS}


async def insert_service(session: AsyncSession, svc: Service, whitelist: Sequence[str]) -> None:
    """The service row and its whitelist; sets `svc.number`. `svc` stays out of the session."""
    values = fill_defaults(svc)
    now = utcnow()
    if lean(session):
        values["wl_now"], values["wl_ips"] = now, list(whitelist)
        svc.number = int(await _INSERT_SERVICE_PG.scalar(session, values))
        return
    svc.number = int(await _INSERT_SERVICE.scalar(session, values))
    await _INSERT_WHITELIST.many(
        session, [{"service_id": svc.service_id, "ip": ip, "created_at": now} for ip in whitelist]
    )


_UPDATES: dict[frozenset[str], DriverStatement] = {}
_ON_UPDATE = [c for c in COLUMNS if c.onupdate is not None]


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


async def lock_service(session: AsyncSession, number: int) -> None:
    """Lock a service's row for the rest of the transaction (concurrent writers of it take turns):
    `SELECT ... FOR UPDATE` on PostgreSQL; nothing on SQLite, whose writing units of work run one at a time
    (BEGIN IMMEDIATE)."""
    if is_postgres(session):
        await session.execute(select(Service.number).where(Service.number == number).with_for_update())


async def add_service(session: AsyncSession, svc: Service, whitelist: Sequence[str]) -> None:
    """The ORM form (a service made outside an order: the operator's, a test's): `svc` joins the session,
    then its whitelist (each address once), flushed."""
    session.add(svc)
    await session.flush()
    for ip in dict.fromkeys(whitelist):
        session.add(ServiceWhitelist(service_id=svc.service_id, ip=ip))
    await session.flush()


def add_whitelist_ip(session: AsyncSession, service_id: uuid.UUID, ip: str) -> None:
    """One address on the service's whitelist, added to the session (flushed with the caller's next
    flush, with the change marker the caller sets)."""
    session.add(ServiceWhitelist(service_id=service_id, ip=ip))


async def remove_whitelist_ip(session: AsyncSession, service_id: uuid.UUID, ip: str) -> bool:
    """The address off the service's whitelist: whether it was there."""
    gone = await session.execute(
        delete(ServiceWhitelist).where(ServiceWhitelist.service_id == service_id, ServiceWhitelist.ip == ip)
    )
    return rowcount(gone) > 0


async def drop_whitelist(
    session: AsyncSession, service_id: uuid.UUID, entry_ids: Sequence[int], now: datetime
) -> None:
    """Remove the service's whitelist entries `entry_ids` and mark the service changed (`updated_at`: the
    gateway's change marker), flushed."""
    await session.execute(delete(ServiceWhitelist).where(ServiceWhitelist.id.in_(list(entry_ids))))
    await session.execute(
        update(Service)
        .where(Service.service_id == service_id)
        .values(updated_at=now)
        .execution_options(synchronize_session=False)
    )
    await session.flush()


async def move_status(
    session: AsyncSession,
    number: int,
    src: str | Sequence[str],
    dst: str,
    *,
    term_over_by: datetime | None = None,
    **values: Any,
) -> bool:
    """A service's status from `src` (one status or any of several) to `dst` with `values` (other columns:
    cancelled_at, purchase_key), guarded: False when the row is not in `src` any more, or with
    `term_over_by` its term does not end by then (nothing written). The loaded object is not updated
    (refresh it)."""
    where = [Service.number == number]
    where.append(Service.status == src if isinstance(src, str) else Service.status.in_(tuple(src)))
    if term_over_by is not None:
        where.append(Service.current_period_end <= term_over_by)
    moved = await session.execute(
        update(Service)
        .where(*where)
        .values(status=dst, updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )
    return rowcount(moved) == 1
