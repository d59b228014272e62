"""The dashboard's OAuth actions as registered operations served by the "web" door only (issue 20.1): the
consent page reads a pending authorization request, the signed-in customer approves it (a grant backed by
a key row with the chosen scopes and caps, and a single-use code) or denies it, and lists and revokes
grants on the API keys page. `adapters/web/consent.py` and `keys.py` read forms and render; each action is
one `invoke` (one unit of work, one commit)."""

from __future__ import annotations

import uuid
from datetime import datetime
from urllib.parse import urlsplit

from pydantic import BaseModel, RootModel

from proxyplane.domains.oauth import clients, service
from proxyplane.ops import Auth, Context, Effect, Handler, Operation, register

WEB = frozenset({"web"})


class RequestRef(BaseModel):
    request_id: uuid.UUID


class PendingRequest(BaseModel):
    request_id: uuid.UUID
    client_id: str
    client_name: str
    redirect_uri: str
    scopes: list[str]


class Approval(BaseModel):
    request_id: uuid.UUID
    scopes: list[str]
    spend_limit_daily_cents: int | None = None
    spend_limit_total_cents: int | None = None
    confirm_spending: bool = False


class Answer(BaseModel):
    """Where the browser goes back to the client: its redirect URI with `code` (or the refusal) and state."""

    redirect_uri: str
    state: str | None = None
    code: str | None = None


class GrantRef(BaseModel):
    grant_id: uuid.UUID


class RevokedGrant(BaseModel):
    client_name: str


class Grant(BaseModel):
    grant_id: uuid.UUID
    key_id: uuid.UUID
    client_id: str
    client_name: str
    scopes: list[str]
    confirm_spending: bool
    created_at: datetime
    last_used_at: datetime | None = None
    refresh_expires_at: datetime | None = None


class Grants(RootModel[list[Grant]]):
    pass


async def _client_name(ctx: Context, client_id: str) -> str:
    known = await clients.cached_client(ctx.session, client_id)
    name = known[1].get("client_name") if known is not None else None
    return str(name or urlsplit(client_id).hostname or client_id)[:200]


async def pending(ctx: Context, data: RequestRef) -> PendingRequest:
    """A request still waiting for the customer's answer (NotFound when answered or expired)."""
    row = await service.pending_request(ctx.session, data.request_id)
    return PendingRequest(
        request_id=row.id,
        client_id=row.client_id,
        client_name=await _client_name(ctx, row.client_id),
        redirect_uri=row.redirect_uri,
        scopes=list(row.scopes),
    )


async def approve(ctx: Context, data: Approval) -> Answer:
    row = await service.pending_request(ctx.session, data.request_id)
    name = await _client_name(ctx, row.client_id)
    row, code = await service.approve(
        ctx.session,
        data.request_id,
        ctx.customer_id,
        name,
        frozenset(data.scopes),
        data.spend_limit_daily_cents,
        data.spend_limit_total_cents,
        confirm_spending=data.confirm_spending,
    )
    return Answer(redirect_uri=row.redirect_uri, state=row.state, code=code)


async def deny(ctx: Context, data: RequestRef) -> Answer:
    row = await service.deny(ctx.session, data.request_id)
    return Answer(redirect_uri=row.redirect_uri, state=row.state)


async def revoke_grant(ctx: Context, data: GrantRef) -> RevokedGrant:
    grant = await service.revoke_grant(ctx.session, ctx.customer_id, data.grant_id)
    return RevokedGrant(client_name=grant.client_name)


async def list_grants(ctx: Context, data: None) -> Grants:
    views = await service.list_grants(ctx.session, ctx.customer_id)
    return Grants([Grant.model_validate(view, from_attributes=True) for view in views])


def _op(
    name: str,
    handler: Handler,
    input: type[BaseModel] | None,
    output: type[BaseModel],
    effect: Effect,
) -> Operation:
    return Operation(
        name=f"web_oauth_{name}",
        summary=f"dashboard: OAuth {name.replace('_', ' ')}",
        method="POST",
        path=f"/oauth/{name}",
        handler=handler,
        input=input,
        output=output,
        effect=effect,
        auth=Auth.KEY,  # the signed-in customer (the dashboard's caller)
        mcp=False,
        doors=WEB,
    )


register(
    _op("request", pending, RequestRef, PendingRequest, Effect.READ),
    _op("approve", approve, Approval, Answer, Effect.WRITE),
    _op("deny", deny, RequestRef, Answer, Effect.WRITE),
    _op("revoke_grant", revoke_grant, GrantRef, RevokedGrant, Effect.WRITE),
    _op("grants", list_grants, None, Grants, Effect.READ),
)
