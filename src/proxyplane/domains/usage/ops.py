"""Operations: usage statistics of a service (totals, export, time series, top destinations, errors)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from proxyplane.core.scopes import Scope
from proxyplane.domains.services import service as services
from proxyplane.domains.usage import service as usage
from proxyplane.ops import Context, Handler, Operation, register

SCOPES = frozenset({Scope.usage_read})
BASE = "/customer/services/{service_id}/usage"
TAGS = ("usage",)


class WindowQuery(BaseModel):
    service_id: uuid.UUID
    start: datetime = Field(description="ISO 8601 date-time (UTC when no offset); required")
    end: datetime = Field(description="ISO 8601 date-time, after start; required")


class SeriesQuery(WindowQuery):
    resolution: Literal["minute", "hour", "day"] = Field(
        default="minute",
        description="points per UTC minute, hour or day; a point is at its bucket's start and the first "
        "and last buckets count only the window's minutes",
    )


class TopQuery(WindowQuery):
    limit: int = Field(default=10, ge=1, le=100)


class Counters(BaseModel):
    requests: int = Field(description="HTTP requests (each CONNECT / SOCKS5 connection counts as one)")
    connections: int = Field(description="tunnels and upstream connections opened")
    bytes_up: int = Field(description="bytes sent to destinations")
    bytes_down: int = Field(description="bytes received from destinations")
    bytes_total: int
    errors: int


def counters(t: usage.Totals) -> Counters:
    return Counters(
        requests=t.requests,
        connections=t.connections,
        bytes_up=t.bytes_up,
        bytes_down=t.bytes_down,
        bytes_total=t.bytes_up + t.bytes_down,
        errors=t.errors,
    )


class UsageOut(Counters):
    service_id: uuid.UUID
    start: datetime = Field(description="start of the first minute bucket counted")
    end: datetime
    errors_by_category: dict[str, int]


class ExportOut(BaseModel):
    service_id: uuid.UUID
    filename: str
    content_type: str = "text/csv"
    rows: int
    csv: str = Field(description="minute,host,requests,connections,bytes_up,bytes_down,errors")


class SeriesPoint(Counters):
    minute: datetime = Field(description="start of the point's minute, hour or day (UTC)")


class SeriesOut(BaseModel):
    service_id: uuid.UUID
    points: list[SeriesPoint]


class Destination(Counters):
    host: str


class DestinationsOut(BaseModel):
    service_id: uuid.UUID
    destinations: list[Destination]


class ErrorsOut(BaseModel):
    service_id: uuid.UUID
    errors_by_category: dict[str, int]
    errors_by_exit_ip: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Upstream failures (connect, refused, timeout) per exit IP and category; exit IPs "
        "without failures are not listed",
    )


async def _owned(ctx: Context, service_id: uuid.UUID) -> uuid.UUID:
    return (await services.get_owned(ctx.session, ctx.customer_id, service_id)).service_id


async def get_usage(ctx: Context, q: WindowQuery) -> UsageOut:
    sid = await _owned(ctx, q.service_id)
    start, end = usage.window(q.start, q.end)
    t = await usage.totals(ctx.session, sid, start, end)
    return UsageOut(
        service_id=sid,
        start=start,
        end=end,
        errors_by_category=t.errors_by_category,
        **counters(t).model_dump(),
    )


async def export_usage(ctx: Context, q: WindowQuery) -> ExportOut:
    sid = await _owned(ctx, q.service_id)
    text, n = await usage.export_csv(ctx.session, sid, q.start, q.end)
    name = f"usage-{sid}-{q.start:%Y%m%dT%H%M}-{q.end:%Y%m%dT%H%M}.csv"
    return ExportOut(service_id=sid, filename=name, rows=n, csv=text)


async def usage_series(ctx: Context, q: SeriesQuery) -> SeriesOut:
    sid = await _owned(ctx, q.service_id)
    points = await usage.series(ctx.session, sid, q.start, q.end, q.resolution)
    return SeriesOut(
        service_id=sid, points=[SeriesPoint(minute=m, **counters(t).model_dump()) for m, t in points]
    )


async def top_destinations(ctx: Context, q: TopQuery) -> DestinationsOut:
    sid = await _owned(ctx, q.service_id)
    rows = await usage.top_destinations(ctx.session, sid, q.start, q.end, q.limit)
    return DestinationsOut(
        service_id=sid, destinations=[Destination(host=h, **counters(t).model_dump()) for h, t in rows]
    )


async def usage_errors(ctx: Context, q: WindowQuery) -> ErrorsOut:
    sid = await _owned(ctx, q.service_id)
    return ErrorsOut(
        service_id=sid,
        errors_by_category=await usage.errors_by_category(ctx.session, sid, q.start, q.end),
        errors_by_exit_ip=await usage.errors_by_exit_ip(ctx.session, sid, q.start, q.end),
    )


def _op(
    name: str, summary: str, path: str, handler: Handler, inp: type[BaseModel], out: type[BaseModel]
) -> Operation:
    return Operation(
        name=name,
        summary=summary,
        method="GET",
        path=path,
        handler=handler,
        input=inp,
        output=out,
        scopes=SCOPES,
        tags=TAGS,
    )


register(
    _op(
        "get_service_usage",
        "Requests, connections, bytes up/down and errors of a service in [start, end) (whole minutes).",
        BASE,
        get_usage,
        WindowQuery,
        UsageOut,
    ),
    _op(
        "export_service_usage",
        "Usage per minute and destination host as CSV; its sums equal get_service_usage for the same window.",
        f"{BASE}/export",
        export_usage,
        WindowQuery,
        ExportOut,
    ),
    _op(
        "get_usage_series",
        "Usage per minute, hour or day (time series) of a service in [start, end).",
        f"{BASE}/series",
        usage_series,
        SeriesQuery,
        SeriesOut,
    ),
    _op(
        "get_top_destinations",
        "Destination hosts with the most traffic in [start, end).",
        f"{BASE}/destinations",
        top_destinations,
        TopQuery,
        DestinationsOut,
    ),
    _op(
        "get_usage_errors",
        "Errors by category (auth, inactive, limit, routing, geo, upstream, timeout...) in [start, end).",
        f"{BASE}/errors",
        usage_errors,
        WindowQuery,
        ErrorsOut,
    ),
)
