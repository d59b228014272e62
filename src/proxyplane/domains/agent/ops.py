"""`whoami`: the calling key, its scopes and the connecting IP as the server sees them."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, Field

from proxyplane.core.errors import Unauthorized
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
    channel: str = Field(description="rest or mcp")
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
register(WHOAMI)
