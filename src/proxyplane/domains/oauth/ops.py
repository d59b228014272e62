"""The OAuth 2.1 authorization server's actions as registered operations (issue 20.1).

Served by the "oauth" door only (`adapters/oauth/`: the MCP SDK's handlers translate the protocol and call
these through `invoke`), never by REST or MCP: client metadata (a fetched client ID metadata document, a
dynamic registration), the authorization request, the authorization code's look-up and exchange, the
refresh token's look-up (reuse detection ends the grant) and rotation, the access token's look-up and
revocation. These take no API key (`Auth.NONE`): the SDK has already authenticated the client (PKCE,
redirect URI, client secret) when they run. The consent page's actions are in `consent_ops.py` (web door).
Each runs in one unit of work that `invoke` commits once; the services here never commit."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from proxyplane.domains.oauth import clients, service
from proxyplane.ops import Auth, Context, Effect, Handler, Operation, register

OAUTH = frozenset({"oauth"})  # the authorization server's door (adapters/oauth)


class ClientRef(BaseModel):
    client_id: str


class ClientMetadata(BaseModel):
    """A client's metadata as stored: a validated client ID metadata document ("cimd") or an RFC 7591
    registration ("dcr"; its client secret in clear text here, encrypted at rest)."""

    client_id: str
    metadata: dict[str, Any]


class StoredClient(BaseModel):
    kind: str
    metadata: dict[str, Any]


class AuthorizationRequest(BaseModel):
    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    state: str | None = None
    code_challenge: str
    scopes: list[str] = []
    resource: str


class RequestId(BaseModel):
    request_id: uuid.UUID


class CodeRef(BaseModel):
    client_id: str
    code: str


class CodeInfo(BaseModel):
    """An approved, unused authorization request (what the token endpoint checks PKCE against)."""

    client_id: str
    scopes: list[str]
    expires_at: datetime
    code_challenge: str
    redirect_uri: str
    redirect_uri_explicit: bool
    resource: str
    customer_id: int


class Code(BaseModel):
    code: str


class Tokens(BaseModel):
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


class TokenRef(BaseModel):
    token: str


class ClientTokenRef(BaseModel):
    client_id: str
    token: str


class Refresh(BaseModel):
    token: str
    scopes: list[str]


class TokenDetails(BaseModel):
    client_id: str
    scopes: list[str]
    expires_at: datetime
    resource: str


async def get_client(ctx: Context, data: ClientRef) -> StoredClient | None:
    """A stored client (a document fetched too long ago counts as unknown); a registered client's secret
    decrypted for the SDK's client authentication."""
    known = await clients.cached_client(ctx.session, data.client_id)
    if known is None:
        return None
    kind, metadata = known
    if kind == "dcr" and metadata.get("client_secret"):
        metadata = {**metadata, "client_secret": ctx.platform.secrets.decrypt(metadata["client_secret"])}
    return StoredClient(kind=kind, metadata=metadata)


async def store_client_document(ctx: Context, data: ClientMetadata) -> None:
    """The result of fetching a client ID metadata document (validated by clients.validate_document)."""
    await clients.store_client(ctx.session, data.client_id, "cimd", data.metadata)


async def register_client(ctx: Context, data: ClientMetadata) -> None:
    """RFC 7591 registration; a client secret is stored encrypted."""
    metadata = dict(data.metadata)
    if metadata.get("client_secret"):
        metadata["client_secret"] = ctx.platform.secrets.encrypt(metadata["client_secret"])
    await clients.store_client(ctx.session, data.client_id, "dcr", metadata)


async def start_authorization(ctx: Context, data: AuthorizationRequest) -> RequestId:
    request_id = await service.start_request(
        ctx.session,
        data.client_id,
        data.redirect_uri,
        data.redirect_uri_explicit,
        data.state,
        data.code_challenge,
        data.scopes,
        data.resource,
    )
    return RequestId(request_id=request_id)


async def get_code(ctx: Context, data: CodeRef) -> CodeInfo | None:
    row = await service.code_request(ctx.session, data.client_id, data.code)
    if row is None or row.customer_id is None:
        return None
    return CodeInfo(
        client_id=row.client_id,
        scopes=list(row.scopes),
        expires_at=row.expires_at,
        code_challenge=row.code_challenge,
        redirect_uri=row.redirect_uri,
        redirect_uri_explicit=row.redirect_uri_explicit,
        resource=row.resource,
        customer_id=row.customer_id,
    )


def _tokens(issued: service.IssuedTokens | None) -> Tokens | None:
    if issued is None:
        return None
    return Tokens(
        access_token=issued.access_token,
        refresh_token=issued.refresh_token,
        expires_in=issued.expires_in,
        scopes=issued.scopes,
    )


async def exchange_code(ctx: Context, data: Code) -> Tokens | None:
    """Claim the code once and issue the first token pair; None when it was used or its grant ended."""
    return _tokens(await service.exchange_code(ctx.session, data.code))


def _details(info: service.TokenInfo | None) -> TokenDetails | None:
    if info is None:
        return None
    return TokenDetails(
        client_id=info.client_id, scopes=info.scopes, expires_at=info.expires_at, resource=info.resource
    )


async def get_refresh_token(ctx: Context, data: ClientTokenRef) -> TokenDetails | None:
    """A live refresh token of this client; one presented again after its rotation ends its grant."""
    info = await service.token_info(ctx.session, data.token, "refresh")
    if info is None:
        await service.refresh_replayed(ctx.session, data.token)
        return None
    return _details(info) if info.client_id == data.client_id else None


async def rotate_refresh_token(ctx: Context, data: Refresh) -> Tokens | None:
    return _tokens(await service.rotate_refresh(ctx.session, data.token, data.scopes))


async def get_access_token(ctx: Context, data: TokenRef) -> TokenDetails | None:
    return _details(await service.token_info(ctx.session, data.token, "access"))


async def revoke_token(ctx: Context, data: TokenRef) -> None:
    """RFC 7009: either token of a grant ends the grant (its tokens and its key row)."""
    await service.revoke_token(ctx.session, data.token)


def _op(
    name: str,
    handler: Handler,
    input: type[BaseModel],
    output: type[BaseModel] | None,
    effect: Effect,
) -> Operation:
    return Operation(
        name=f"oauth_{name}",
        summary=f"OAuth authorization server: {name.replace('_', ' ')}",
        method="POST",
        path=f"/oauth/{name}",
        handler=handler,
        input=input,
        output=output,
        effect=effect,
        auth=Auth.NONE,
        mcp=False,
        doors=OAUTH,
    )


READ, WRITE = Effect.READ, Effect.WRITE
register(
    _op("client", get_client, ClientRef, StoredClient, READ),
    _op("store_client_document", store_client_document, ClientMetadata, None, WRITE),
    _op("register_client", register_client, ClientMetadata, None, WRITE),
    _op("authorize", start_authorization, AuthorizationRequest, RequestId, WRITE),
    _op("code", get_code, CodeRef, CodeInfo, READ),
    _op("exchange_code", exchange_code, Code, Tokens, WRITE),
    _op("refresh_token", get_refresh_token, ClientTokenRef, TokenDetails, WRITE),
    _op("rotate_refresh_token", rotate_refresh_token, Refresh, Tokens, WRITE),
    _op("access_token", get_access_token, TokenRef, TokenDetails, READ),
    _op("revoke", revoke_token, TokenRef, None, WRITE),
)
