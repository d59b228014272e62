"""API-key operations under /customers/me/api-keys."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from proxyplane.core.bounds import CENTS_MAX
from proxyplane.core.errors import Forbidden
from proxyplane.core.scopes import Scope
from proxyplane.core.text_input import Label
from proxyplane.domains.apikeys import caps, service
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import ApiKey


class ApiKeyRecord(BaseModel):
    key_id: uuid.UUID
    name: str
    scopes: list[Scope]
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    last_used_ip: str | None
    spend_limit_daily_cents: int | None = Field(
        default=None, description="most this key may charge to the wallet per UTC day; null: no cap"
    )
    spend_limit_total_cents: int | None = Field(
        default=None, description="most this key may charge to the wallet in total; null: no cap"
    )
    spent_today_cents: int = Field(default=0, description="charged through this key today (UTC), if capped")
    spent_total_cents: int = Field(default=0, description="charged through this key in total, if capped")
    confirm_spending: bool = Field(
        default=False,
        description="every spend through this key is confirmed by the person (MCP elicitation) first",
    )


class ApiKeyList(RootModel[list[ApiKeyRecord]]):
    pass


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Label = Field(min_length=1, max_length=100)
    scopes: list[Scope] = Field(min_length=1, description="explicit scopes the new key holds")
    spend_limit_daily_cents: int | None = Field(
        default=None,
        ge=0,
        le=CENTS_MAX,
        description="optional cap: most this key may charge to the wallet per UTC day",
    )
    spend_limit_total_cents: int | None = Field(
        default=None,
        ge=0,
        le=CENTS_MAX,
        description="optional cap: most this key may charge to the wallet in total",
    )
    confirm_spending: bool = Field(
        default=False,
        strict=True,  # a JSON boolean only: 0 or "yes" is 422 (issue 30.6)
        description="require the person to confirm every spend over MCP (elicitation); a client that "
        "cannot ask is refused",
    )

    @field_validator("spend_limit_daily_cents", "spend_limit_total_cents", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        if isinstance(value, bool):  # JSON false is not 0 cents
            raise ValueError("a cap is a number of cents, not a boolean")
        return value


class ApiKeyCreated(ApiKeyRecord):
    secret: str = Field(description="the full key; shown only in this response")


class ApiKeyRef(BaseModel):
    key_id: uuid.UUID


class Message(BaseModel):
    message: str


def record(key: ApiKey, cap: caps.Caps = caps.NO_CAPS) -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=key.id,
        name=key.name,
        scopes=[Scope(s) for s in key.scopes],
        prefix=key.prefix,
        created_at=key.created_at,
        last_used_at=key.last_used_at,
        last_used_ip=key.last_used_ip,
        spend_limit_daily_cents=cap.daily_limit_cents,
        spend_limit_total_cents=cap.total_limit_cents,
        spent_today_cents=cap.spent_today_cents,
        spent_total_cents=cap.spent_total_cents,
        confirm_spending=bool(key.confirm_spending),
    )


async def list_api_keys(ctx: Context, _: None) -> ApiKeyList:
    keys = await service.list_keys(ctx.session, ctx.customer_id)
    spending = await caps.caps_of(ctx.session, [k.id for k in keys])
    return ApiKeyList([record(k, spending.get(k.id, caps.NO_CAPS)) for k in keys])


async def create_api_key(ctx: Context, data: ApiKeyCreate) -> ApiKeyCreated:
    # a key that must confirm its spending cannot mint one that need not (it would escape the rule)
    creator = await ctx.session.get(ApiKey, ctx.caller.key_id) if ctx.caller.key_id is not None else None
    key, raw = await service.create_key(
        ctx.session,
        ctx.customer_id,
        data.name,
        frozenset(s.value for s in data.scopes),
        # a key, or a team member (issue 34.5: never beyond the role), cannot grant what it lacks
        granted_by=ctx.caller.scopes if ctx.caller.key_id is not None or ctx.caller.member_id else None,
        confirm_spending=data.confirm_spending or bool(creator is not None and creator.confirm_spending),
        member_id=ctx.caller.member_id,
    )
    await caps.set_caps(ctx.session, key.id, data.spend_limit_daily_cents, data.spend_limit_total_cents)
    cap = (await caps.caps_of(ctx.session, [key.id])).get(key.id, caps.NO_CAPS)
    return ApiKeyCreated(**record(key, cap).model_dump(), secret=raw)


async def revoke_api_key(ctx: Context, data: ApiKeyRef) -> Message:
    if ctx.caller.member_id is not None:  # a team member who does not manage revokes only their own keys
        from proxyplane.domains.team.roles import MANAGERS
        from proxyplane.domains.team.service import caller_role

        role, _ = await caller_role(ctx)
        target = await ctx.session.get(ApiKey, data.key_id)
        mine = target is not None and target.member_id == ctx.caller.member_id
        if role not in MANAGERS and target is not None and target.customer_id == ctx.customer_id and not mine:
            raise Forbidden(
                f"the {role} role revokes only the API keys it made (an owner or admin revokes any)",
                role=role,
            )
    key = await service.revoke_key(ctx.session, ctx.customer_id, data.key_id)
    return Message(message=f"API key {key.id} revoked")


LIST_KEYS = Operation(
    name="list_api_keys",
    summary="List your active API keys (never their secrets).",
    method="GET",
    path="/customers/me/api-keys",
    handler=list_api_keys,
    output=ApiKeyList,
    scopes=frozenset({Scope.customer_read}),
    tags=("api-keys",),
)
CREATE_KEY = Operation(
    name="create_api_key",
    summary="Create an API key with explicit scopes and optional spending caps (per UTC day, in total); "
    "the secret is returned once.",
    method="POST",
    path="/customers/me/api-keys",
    handler=create_api_key,
    input=ApiKeyCreate,
    output=ApiKeyCreated,
    scopes=frozenset({Scope.customer_write}),
    effect=Effect.WRITE,
    status_code=201,
    tags=("api-keys",),
)
REVOKE_KEY = Operation(
    name="revoke_api_key",
    summary="Revoke an API key; it stops working at once.",
    method="DELETE",
    path="/customers/me/api-keys/{key_id}",
    handler=revoke_api_key,
    input=ApiKeyRef,
    output=Message,
    scopes=frozenset({Scope.customer_write}),
    effect=Effect.WRITE,
    tags=("api-keys",),
)
register(LIST_KEYS, CREATE_KEY, REVOKE_KEY)
