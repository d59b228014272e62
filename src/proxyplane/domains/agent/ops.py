"""`whoami`: the calling key, its scopes and the connecting IP as the server sees them.
`get_recommendations`: what to do next, derived from usage, errors, limits, terms and the wallet."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.bounds import documented
from proxyplane.core.errors import Unauthorized
from proxyplane.core.scopes import Scope
from proxyplane.domains.agent import recommendations
from proxyplane.ops import Context, Operation, register
from proxyplane.storage.models import ApiKey


class WhoAmI(BaseModel):
    customer_id: int
    key_id: uuid.UUID
    key_name: str
    key_prefix: str
    scopes: list[str] = Field(description="the scopes this key holds; each tool lists the ones it needs")
    client_ip: str = Field(description="the connecting IP address as seen by the server")
    user_agent: str
    channel: str = Field(description="rest or mcp", json_schema_extra=documented(enum=["rest", "mcp"]))
    key_created_at: datetime


async def whoami(ctx: Context, _: None) -> WhoAmI:
    key = await ctx.session.get(ApiKey, ctx.caller.key_id) if ctx.caller.key_id is not None else None
    if key is None or key.customer_id != ctx.customer_id:
        raise Unauthorized("an API key is required: send Authorization: Bearer <API_KEY>")
    return WhoAmI(
        customer_id=ctx.customer_id,
        key_id=key.id,
        key_name=key.name,
        key_prefix=key.prefix,
        scopes=sorted(ctx.caller.scopes),
        client_ip=ctx.caller.client_ip,
        user_agent=ctx.caller.user_agent,
        channel=ctx.caller.channel,
        key_created_at=key.created_at,
    )


WHOAMI = Operation(
    name="whoami",
    summary="The API key in use (name, prefix, scopes) and the connecting IP address as the server sees it.",
    method="GET",
    path="/customer/whoami",
    handler=whoami,
    output=WhoAmI,
    tags=("profile",),
)


class RecommendationsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    days: int = Field(default=7, ge=1, le=90, description="usage window: the last N days")
    service_id: uuid.UUID | None = Field(default=None, description="only this service")


class RecommendationOut(BaseModel):
    kind: str = Field(
        description="resume_service, extra_connections, raise_connection_limit, check_credentials, "
        "refresh_ips, renew, top_up",
        json_schema_extra=documented(
            enum=[
                "resume_service",
                "extra_connections",
                "raise_connection_limit",
                "check_credentials",
                "refresh_ips",
                "renew",
                "top_up",
            ]
        ),
    )
    severity: str = Field(
        description="high, medium or low", json_schema_extra=documented(enum=["high", "medium", "low"])
    )
    service_id: uuid.UUID | None
    action: str = Field(description="the operation (MCP tool) that acts on it")
    reason: str
    data: dict[str, Any] = Field(description="the numbers behind the reason")


class RecommendationsOut(BaseModel):
    days: int
    items: list[RecommendationOut] = Field(description="most severe first")
    notes: list[str] = Field(description="what was not checked and why")


async def get_recommendations(ctx: Context, q: RecommendationsQuery) -> RecommendationsOut:
    from proxyplane.core.clock import utcnow

    wallet_ok = Scope.wallet_read in ctx.caller.scopes or ctx.caller.key_id is None
    now = utcnow()
    found = await recommendations.recommend(
        ctx.session, ctx.customer_id, days=q.days, service_id=q.service_id, include_balance=wallet_ok, now=now
    )
    return RecommendationsOut(
        days=q.days,
        items=[RecommendationOut(**r.__dict__) for r in found],
        notes=[] if wallet_ok else ["balance vs. upcoming renewals not checked: the key lacks wallet:read"],
    )


RECOMMENDATIONS = Operation(
    name="get_recommendations",
    summary="What to do next, from real data: connection-limit hits (extra connections), authentication "
    "errors (credentials/whitelist), upstream errors (refresh IPs), terms ending without auto-renew (renew), "
    "suspended services (resume), balance below upcoming renewals (top up); each with reason and numbers.",
    method="GET",
    path="/customer/recommendations",
    handler=get_recommendations,
    input=RecommendationsQuery,
    output=RecommendationsOut,
    scopes=frozenset({Scope.usage_read, Scope.services_read}),
    tags=("usage",),
)
register(WHOAMI, RECOMMENDATIONS)
