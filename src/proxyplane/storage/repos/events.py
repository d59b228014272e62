"""Fragments of the lean PostgreSQL order statements that write `events` and `webhook_deliveries`
(storage/repos/orders.py). The plain writers are still domains/events/ (issue 31: allow-listed in
tests/test_architecture.py until they move here)."""

from __future__ import annotations


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
