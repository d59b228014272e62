"""The writer of `events` and of their queued `webhook_deliveries` (issue 31: moved from
domains/events/service.py, which decides what is emitted and to which endpoints): the ORM form of one
event, the prebuilt Core INSERTs of several (the order path: executemany, driver statements), and the
fragments of the lean PostgreSQL order statements (storage/repos/orders.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, insert
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.driver import DriverStatement
from proxyplane.storage.models import Event, WebhookDelivery

# built once (the order path runs them on every order): plain table INSERTs, executemany
_INSERT_EVENTS = DriverStatement(insert(cast(Table, Event.__table__)))
_INSERT_DELIVERIES = DriverStatement(insert(cast(Table, WebhookDelivery.__table__)))


async def add_event(session: AsyncSession, event: Event, deliveries: Iterable[WebhookDelivery]) -> None:
    """One event and its deliveries through the ORM, flushed (never committed)."""
    session.add(event)
    session.add_all(list(deliveries))
    await session.flush()


async def add_deliveries(session: AsyncSession, deliveries: Iterable[WebhookDelivery]) -> None:
    """Deliveries of events already stored (a redelivery), through the ORM, flushed."""
    session.add_all(list(deliveries))
    await session.flush()


async def insert_events(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    """Events (id, customer_id, type, data, created_at) in one executemany."""
    if rows:
        await _INSERT_EVENTS.many(session, rows)


async def insert_deliveries(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    """Queued deliveries (webhook_deliveries columns) in one executemany."""
    if rows:
        await _INSERT_DELIVERIES.many(session, rows)


def events_cte(data: str, sources: str) -> str:
    """CTE `ev`: events from arrays unnested in `sources` as `e(i, t, d, c, ...)` (id, type, data, created
    at), the data as the SQL expression `data`, in order (`e.n`)."""
    return (
        "ev AS (INSERT INTO events (id, customer_id, type, data, created_at)"
        f" SELECT e.i, CAST(:customer_id AS INTEGER), e.t, {data}, e.c FROM {sources} ORDER BY e.n)"
    )


def deliveries_cte(sources: str, where: str) -> str:
    """CTE `dl`: one delivery per (event, subscribed enabled endpoint), in event order then endpoint age, as
    events.emit_many queues them (an empty choice of types means every type); the events unnested in
    `sources` as `e(i, t, ...)`, kept by `where`."""
    return (
        "dl AS (INSERT INTO webhook_deliveries (public_id, customer_id, endpoint_id, event_id, status,"
        " attempts, next_attempt_at, created_at)"
        " SELECT gen_random_uuid(), CAST(:customer_id AS INTEGER), ep.id, e.i, 'pending', 0,"
        " CAST(:e_now AS TIMESTAMPTZ), CAST(:e_now AS TIMESTAMPTZ)"
        f" FROM {sources}"
        " JOIN webhook_endpoints AS ep ON ep.customer_id = CAST(:customer_id AS INTEGER) AND ep.enabled"
        " AND (ep.event_types IS NULL OR json_typeof(ep.event_types) <> 'array'"
        " OR json_array_length(ep.event_types) = 0"
        " OR EXISTS (SELECT 1 FROM json_array_elements_text(ep.event_types) AS x(t) WHERE x.t = e.t))"
        f" WHERE {where}"
        " ORDER BY e.n, ep.created_at)"
    )
