"""The operator's upstream pools (issue 36.4) as registered operator operations: `proxyplane admin upstream
add|list|set|check|margin`, the operator API (/api/admin/v1/upstream_*) and the console (/admin/upstreams,
/admin/margin). Registering, changing and checking need `stock.write`, listing `stock.read` (suppliers
are stock bought from others), the margin report `reports.read`. No output ever holds a supplier
password."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from proxyplane.domains.upstreams import service as upstreams
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register


class NewUpstream(BaseModel):
    pool: str = Field(min_length=1, max_length=40, description="the pool's name (a product's upstream_pool)")
    scheme: Literal["http", "socks5"]
    host: str = Field(min_length=1, max_length=255)
    port: int = Field(ge=1, le=65535)
    username: str = Field(default="", max_length=255, description="the supplier account's username: {user}")
    password: str = Field(default="", max_length=255, description="kept sealed; never shown again")
    template: str = Field(default="{user}", min_length=1, max_length=300,
                          description="e.g. {user}[-country-{country}][-session-{session}]")
    cost_per_gb_cents: int = Field(default=0, ge=0, le=1_000_000)
    position: int | None = Field(default=None, ge=1, le=1000, description="failover order (default: last)")
    name: str = Field(default="", max_length=100)
    check_target: str = Field(default="example.com:80", max_length=300)


class UpstreamChange(BaseModel):
    upstream_id: uuid.UUID
    position: int | None = Field(default=None, ge=1, le=1000)
    active: bool | None = None
    username: str | None = Field(default=None, max_length=255)
    password: str | None = Field(default=None, max_length=255)
    template: str | None = Field(default=None, min_length=1, max_length=300)
    cost_per_gb_cents: int | None = Field(default=None, ge=0, le=1_000_000)
    name: str | None = Field(default=None, max_length=100)
    check_target: str | None = Field(default=None, max_length=300)


class PoolFilter(BaseModel):
    pool: str | None = None


class CheckWhich(BaseModel):
    upstream_id: uuid.UUID | None = None
    pool: str | None = None


class MarginPeriod(BaseModel):
    days: int = Field(default=30, ge=1, le=366)
    pool: str | None = None


async def add(ctx: Context, data: NewUpstream) -> dict[str, Any]:
    u = await upstreams.register(ctx.session, ctx.platform.secrets, **data.model_dump())
    ctx.audit["target"] = f"upstream {u.upstream_id}"
    return upstreams.upstream_json(u)


async def listing(ctx: Context, data: PoolFilter) -> list[dict[str, Any]]:
    return [upstreams.upstream_json(u) for u in await upstreams.listing(ctx.session, data.pool)]


async def change(ctx: Context, data: UpstreamChange) -> dict[str, Any]:
    values = data.model_dump(exclude={"upstream_id"})
    u = await upstreams.change(ctx.session, ctx.platform.secrets, data.upstream_id, values)
    ctx.audit["target"] = f"upstream {u.upstream_id}"
    return upstreams.upstream_json(u)


async def check(ctx: Context, data: CheckWhich) -> list[dict[str, Any]]:
    checked = await upstreams.check(ctx.session, ctx.platform.secrets, data.upstream_id, data.pool)
    return [upstreams.upstream_json(u) for u in checked]


async def margin(ctx: Context, data: MarginPeriod) -> dict[str, Any]:
    return await upstreams.margin(ctx.session, data.days, data.pool)


ALL = OPERATOR_DOORS  # the CLI, the operator API and the console (adapters/admin/upstreams.py)
register(operator_op("upstream_add", add, NewUpstream, permission="stock.write", doors=ALL))
register(operator_op("upstream_list", listing, PoolFilter, Effect.READ, permission="stock.read", doors=ALL))
register(operator_op("upstream_set", change, UpstreamChange, permission="stock.write", doors=ALL))
register(operator_op("upstream_check", check, CheckWhich, permission="stock.write", doors=ALL))
register(operator_op("upstream_margin", margin, MarginPeriod, Effect.READ, permission="reports.read",
                     doors=ALL))
