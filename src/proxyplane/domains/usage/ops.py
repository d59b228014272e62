"""Operations: usage statistics of a service (totals, export, time series, top destinations, errors)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from proxyplane.core.scopes import Scope
from proxyplane.domains.services import service as services
from proxyplane.domains.subusers import service as subusers
from proxyplane.domains.usage import service as usage
from proxyplane.ops import Context, Handler, Operation, register

SCOPES = frozenset({Scope.usage_read})
BASE = "/customer/services/{service_id}/usage"
TAGS = ("usage",)


class WindowQuery(BaseModel):
    service_id: uuid.UUID
    start: datetime = Field(description="ISO 8601 date-time (UTC when no offset); required")
    end: datetime = Field(description="ISO 8601 date-time, after start; required")
    subuser_id: uuid.UUID | None = Field(
        default=None, description="only this sub-user's usage (a sub-user of the service; 404 otherwise)"
    )


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
    subuser_id: uuid.UUID | None = Field(default=None, description="the sub-user filter, when given")
    start: datetime = Field(description="start of the first minute bucket counted")
    end: datetime
    errors_by_category: dict[str, int]


class ExportOut(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID | None = Field(default=None, description="the sub-user filter, when given")
    filename: str
    content_type: str = "text/csv"
    rows: int
    csv: str = Field(description="minute,host,requests,connections,bytes_up,bytes_down,errors")


class SeriesPoint(Counters):
    minute: datetime = Field(description="start of the point's minute, hour or day (UTC)")


class SeriesOut(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID | None = Field(default=None, description="the sub-user filter, when given")
    points: list[SeriesPoint]


class Destination(Counters):
    host: str


class DestinationsOut(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID | None = Field(default=None, description="the sub-user filter, when given")
    destinations: list[Destination]


class ErrorsOut(BaseModel):
    service_id: uuid.UUID
    subuser_id: uuid.UUID | None = Field(default=None, description="the sub-user filter, when given")
    errors_by_category: dict[str, int]
    errors_by_exit_ip: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Upstream failures (connect, refused, timeout) per exit IP and category (an IPv6 "
        "service's per subnet, not per drawn address); exit IPs without failures are not listed; with a "
        "sub-user filter, that sub-user's",
    )


async def _owned(ctx: Context, q: WindowQuery) -> tuple[uuid.UUID, int | None]:
    """(the customer's service id, the internal id of the sub-user filter or None); 404 for another
    customer's service or a sub-user of another service."""
    svc = await services.get_owned(ctx.session, ctx.customer_id, q.service_id)
    if q.subuser_id is None:
        return svc.service_id, None
    return svc.service_id, (await subusers.get_owned(ctx.session, svc, q.subuser_id)).id


async def get_usage(ctx: Context, q: WindowQuery) -> UsageOut:
    sid, sub = await _owned(ctx, q)
    start, end = usage.window(q.start, q.end)
    t = await usage.totals(ctx.session, sid, start, end, subuser=sub)
    return UsageOut(
        service_id=sid,
        subuser_id=q.subuser_id,
        start=start,
        end=end,
        errors_by_category=t.errors_by_category,
        **counters(t).model_dump(),
    )


async def export_usage(ctx: Context, q: WindowQuery) -> ExportOut:
    sid, sub = await _owned(ctx, q)
    text, n = await usage.export_csv(ctx.session, sid, q.start, q.end, subuser=sub)
    who = f"{sid}-{q.subuser_id}" if q.subuser_id else str(sid)
    name = f"usage-{who}-{q.start:%Y%m%dT%H%M}-{q.end:%Y%m%dT%H%M}.csv"
    return ExportOut(service_id=sid, subuser_id=q.subuser_id, filename=name, rows=n, csv=text)


async def usage_series(ctx: Context, q: SeriesQuery) -> SeriesOut:
    sid, sub = await _owned(ctx, q)
    points = await usage.series(ctx.session, sid, q.start, q.end, q.resolution, subuser=sub)
    return SeriesOut(
        service_id=sid,
        subuser_id=q.subuser_id,
        points=[SeriesPoint(minute=m, **counters(t).model_dump()) for m, t in points],
    )


async def top_destinations(ctx: Context, q: TopQuery) -> DestinationsOut:
    sid, sub = await _owned(ctx, q)
    rows = await usage.top_destinations(ctx.session, sid, q.start, q.end, q.limit, subuser=sub)
    return DestinationsOut(
        service_id=sid,
        subuser_id=q.subuser_id,
        destinations=[Destination(host=h, **counters(t).model_dump()) for h, t in rows],
    )


async def usage_errors(ctx: Context, q: WindowQuery) -> ErrorsOut:
    sid, sub = await _owned(ctx, q)
    return ErrorsOut(
        service_id=sid,
        subuser_id=q.subuser_id,
        errors_by_category=await usage.errors_by_category(ctx.session, sid, q.start, q.end, subuser=sub),
        errors_by_exit_ip=await usage.errors_by_exit_ip(ctx.session, sid, q.start, q.end, subuser=sub),
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
