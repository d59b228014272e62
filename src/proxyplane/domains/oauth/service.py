"""Authorization requests, consent (grants), codes and tokens of the OAuth 2.1 authorization server.

A grant is backed by an `api_keys` row that no raw key opens: scopes, spending caps, last use and
revocation are the API key machinery, and a token resolves to the same principal type as a key
(`OAuthPrincipal` is a `KeyPrincipal`), so `invoke()` checks scopes and counts spending unchanged.
Codes and tokens are random secrets stored as sha256 hashes only; a code and a refresh token are single
use (a conditional UPDATE claims them), and a refresh token presented again after its rotation ends the
grant (it was stolen or replayed). Services never commit."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import NotFound
from proxyplane.core.security import API_KEY_PREFIX, hash_api_key
from proxyplane.domains.apikeys.cache import KeyPrincipal
from proxyplane.domains.apikeys.caps import set_caps
from proxyplane.domains.apikeys.service import create_key, revoke_key
from proxyplane.storage.engine import Database
from proxyplane.storage.models import ApiKey, Customer
from proxyplane.storage.models.oauth import OAuthGrant, OAuthRequest, OAuthToken
from proxyplane.storage.repos import oauth as oauth_rows

ACCESS_PREFIX = "ppo_at_"
REFRESH_PREFIX = "ppo_rt_"
GRANT_KEY_PREFIX = "oauth"  # api_keys.prefix of a grant's key row (it has no usable raw key)
ACCESS_SECONDS = 3600
REFRESH_SECONDS = 30 * 86400
CONSENT_SECONDS = 600  # from /authorize to the customer's answer
CODE_SECONDS = 60  # from consent to the code's exchange


@dataclass(frozen=True, kw_only=True)
class OAuthPrincipal(KeyPrincipal):
    """An access token's caller: a KeyPrincipal (key_id is the grant's key row) plus the grant; the inherited
    `confirm_spending` is the consent page's "ask me to confirm every spend" (read by MCP elicitation)."""

    grant_id: uuid.UUID
    client_id: str


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


@dataclass(frozen=True)
class TokenInfo:
    grant_id: uuid.UUID
    client_id: str
    kind: str
    scopes: list[str]
    expires_at: datetime
    resource: str


def digest(raw: str) -> str:
    return hash_api_key(raw)


async def start_request(
    session: AsyncSession,
    client_id: str,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    state: str | None,
    code_challenge: str,
    scopes: list[str],
    resource: str,
) -> uuid.UUID:
    row = OAuthRequest(
        client_id=client_id,
        redirect_uri=redirect_uri,
        redirect_uri_explicit=redirect_uri_explicit,
        state=state,
        code_challenge=code_challenge,
        scopes=sorted(set(scopes)),
        resource=resource,
        expires_at=utcnow() + timedelta(seconds=CONSENT_SECONDS),
    )
    await oauth_rows.add_request(session, row)
    return row.id


async def pending_request(session: AsyncSession, request_id: uuid.UUID) -> OAuthRequest:
    """A request still waiting for the customer's answer, or NotFound."""
    row = await session.get(OAuthRequest, request_id)
    if row is None or row.code_hash is not None or row.used_at is not None or row.expires_at < utcnow():
        raise NotFound("this authorization request is unknown, answered or expired; start again from the app")
    return row


async def approve(
    session: AsyncSession,
    request_id: uuid.UUID,
    customer_id: int,
    client_name: str,
    scopes: frozenset[str],
    daily_limit_cents: int | None,
    total_limit_cents: int | None,
    confirm_spending: bool,
) -> tuple[OAuthRequest, str]:
    """The customer consents: a grant (its key row carries scopes and caps; an earlier grant of the same
    client ends) and a single-use code. Returns the request and the raw code."""
    row = await pending_request(session, request_id)
    earlier = await session.execute(
        select(OAuthGrant.id).where(
            OAuthGrant.customer_id == customer_id,
            OAuthGrant.client_id == row.client_id,
            OAuthGrant.revoked_at.is_(None),
        )
    )
    for (grant_id,) in earlier.all():
        await revoke_grant(session, customer_id, grant_id)
    key, _unused = await create_key(
        session, customer_id, f"OAuth: {client_name}"[:100], scopes, prefix=GRANT_KEY_PREFIX
    )
    await set_caps(session, key.id, daily_limit_cents, total_limit_cents)
    grant = OAuthGrant(
        customer_id=customer_id,
        api_key_id=key.id,
        client_id=row.client_id,
        client_name=client_name[:200],
        resource=row.resource,
        confirm_spending=confirm_spending,
    )
    await oauth_rows.add_grant(session, grant)
    code = secrets.token_urlsafe(32)
    row.customer_id, row.grant_id, row.code_hash = customer_id, grant.id, digest(code)
    row.expires_at = utcnow() + timedelta(seconds=CODE_SECONDS)
    await session.flush()
    return row, code


async def deny(session: AsyncSession, request_id: uuid.UUID) -> OAuthRequest:
    row = await pending_request(session, request_id)
    row.used_at = utcnow()
    await session.flush()
    return row


async def code_request(session: AsyncSession, client_id: str, code: str) -> OAuthRequest | None:
    """The approved, unused request a code belongs to (for the token endpoint's PKCE check)."""
    row = (
        await session.execute(select(OAuthRequest).where(OAuthRequest.code_hash == digest(code)))
    ).scalar_one_or_none()
    if row is None or row.client_id != client_id or row.used_at is not None or row.grant_id is None:
        return None
    return row


async def exchange_code(session: AsyncSession, code: str) -> IssuedTokens | None:
    """Claim the code once (None when it was used meanwhile) and issue the first token pair."""
    grant_id = await oauth_rows.claim_code(session, digest(code), utcnow())
    if grant_id is None:
        return None
    grant = await session.get(OAuthGrant, grant_id)
    if grant is None or grant.revoked_at is not None:
        return None
    key = await session.get(ApiKey, grant.api_key_id)
    return await issue_tokens(session, grant.id, list(key.scopes) if key is not None else [])


async def issue_tokens(session: AsyncSession, grant_id: uuid.UUID, scopes: list[str]) -> IssuedTokens:
    now = utcnow()
    access = ACCESS_PREFIX + secrets.token_urlsafe(32)
    refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)
    pair = ((access, "access", ACCESS_SECONDS), (refresh, "refresh", REFRESH_SECONDS))
    tokens = [
        OAuthToken(
            token_hash=digest(raw),
            grant_id=grant_id,
            kind=kind,
            scopes=sorted(scopes),
            created_at=now,
            expires_at=now + timedelta(seconds=seconds),
        )
        for raw, kind, seconds in pair
    ]
    await oauth_rows.add_tokens(session, tokens)
    return IssuedTokens(access, refresh, ACCESS_SECONDS, sorted(scopes))


async def token_info(session: AsyncSession, raw: str, kind: str) -> TokenInfo | None:
    """A live token of a live grant (not revoked, not expired), or None."""
    row = (
        await session.execute(
            select(OAuthToken, OAuthGrant.client_id, OAuthGrant.resource)
            .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
            .where(
                OAuthToken.token_hash == digest(raw),
                OAuthToken.kind == kind,
                OAuthGrant.revoked_at.is_(None),
            )
        )
    ).first()
    if row is None:
        return None
    token, client_id, resource = row
    if token.revoked_at is not None or token.expires_at <= utcnow():
        return None
    return TokenInfo(token.grant_id, client_id, kind, list(token.scopes), token.expires_at, resource)


async def rotate_refresh(session: AsyncSession, raw: str, scopes: list[str]) -> IssuedTokens | None:
    """Spend a refresh token (single use) for a new pair; presented again after rotation, the grant ends."""
    grant_id = await oauth_rows.spend_refresh(session, digest(raw), utcnow())
    if grant_id is None:
        await refresh_replayed(session, raw)
        return None
    return await issue_tokens(session, grant_id, scopes)


async def refresh_replayed(session: AsyncSession, raw: str) -> bool:
    """A refresh token that was already spent (rotated) is presented again: end its grant (OAuth 2.1
    refresh token reuse detection). True when that happened."""
    row = await session.get(OAuthToken, digest(raw))
    if row is None or row.kind != "refresh" or row.revoked_at is None:
        return False
    grant = await session.get(OAuthGrant, row.grant_id)
    if grant is None or grant.revoked_at is not None:
        return False
    await revoke_grant(session, grant.customer_id, grant.id)
    return True


async def revoke_token(session: AsyncSession, raw: str) -> None:
    """RFC 7009: revoking either token of a grant ends the grant (its tokens and its key row)."""
    row = await session.get(OAuthToken, digest(raw))
    if row is None:
        return
    grant = await session.get(OAuthGrant, row.grant_id)
    if grant is not None:
        await revoke_grant(session, grant.customer_id, grant.id)


async def revoke_grant(session: AsyncSession, customer_id: int, grant_id: uuid.UUID) -> OAuthGrant:
    grant = await session.get(OAuthGrant, grant_id)
    if grant is None or grant.customer_id != customer_id:
        raise NotFound(f"OAuth grant {grant_id} not found")
    now = utcnow()
    if grant.revoked_at is None:
        grant.revoked_at = now
    await oauth_rows.revoke_grant_tokens(session, grant_id, now)
    await revoke_key(session, customer_id, grant.api_key_id)
    await session.flush()
    return grant


# The MCP endpoint's token check, built once (its cache key is memoized): one statement by the token's
# primary key through the grant, its key row and the customer, every "still valid" condition but expiry in
# SQL, plain columns, no ORM session (issue 20.2: ~4 ms of CPU per MCP request went to the ORM path).
_TOKEN_CHECK = (
    select(
        OAuthToken.scopes,
        OAuthToken.expires_at,
        OAuthGrant.id,
        OAuthGrant.client_id,
        OAuthGrant.resource,
        OAuthGrant.confirm_spending,
        ApiKey.id,
        ApiKey.customer_id,
        ApiKey.scopes,
    )
    .join(OAuthGrant, OAuthGrant.id == OAuthToken.grant_id)
    .join(ApiKey, ApiKey.id == OAuthGrant.api_key_id)
    .join(Customer, Customer.id == ApiKey.customer_id)
    .where(
        OAuthToken.token_hash == bindparam("token_hash"),
        OAuthToken.kind == "access",
        OAuthToken.revoked_at.is_(None),
        OAuthGrant.revoked_at.is_(None),
        ApiKey.revoked_at.is_(None),
        Customer.status == "active",
    )
)


def refused_bearer(token: str, oauth_accepted: bool) -> str:
    """The 401 message for a bearer token that authenticated nothing, by what it looks like (issue 30.7):
    an API key (`ppk_`), an OAuth access token (`ppo_at_`; the REST API takes API keys only), an OAuth
    refresh token sent as a bearer, or neither."""
    if token.startswith(API_KEY_PREFIX):
        return "invalid or revoked API key"
    if token.startswith(ACCESS_PREFIX):
        if not oauth_accepted:
            return "an OAuth access token is accepted by the MCP endpoint only; this API takes API keys"
        return "invalid, expired or revoked OAuth access token: refresh it or authorize again"
    if token.startswith(REFRESH_PREFIX):
        return "an OAuth refresh token is not an access token: exchange it at the token endpoint"
    what = "an API key or an OAuth access token" if oauth_accepted else "an API key"
    return f"unrecognized bearer token: send {what} issued by this server"


async def authenticate_token(db: Database, raw: str, resource: str) -> OAuthPrincipal | None:
    """The access token's principal when it is live and was issued for `resource` (RFC 8707 audience);
    read on every request (no cache), so a revocation (token, grant or key row) is refused at once."""
    if not raw.startswith(ACCESS_PREFIX) or len(raw) > 200:
        return None
    row = await oauth_rows.read_alone(db, _TOKEN_CHECK, {"token_hash": digest(raw)})  # one statement
    if row is None:
        return None
    scopes, expires_at, grant_id, client_id, token_resource, confirm, key_id, customer_id, key_scopes = row
    if expires_at <= utcnow() or token_resource.rstrip("/") != resource.rstrip("/"):
        return None
    return OAuthPrincipal(
        key_id=key_id,
        customer_id=customer_id,
        scopes=frozenset(scopes) & frozenset(key_scopes),
        grant_id=grant_id,
        client_id=client_id,
        confirm_spending=bool(confirm),
    )


@dataclass(frozen=True)
class GrantView:
    grant_id: uuid.UUID
    key_id: uuid.UUID
    client_id: str
    client_name: str
    scopes: list[str]
    confirm_spending: bool
    created_at: datetime
    last_used_at: datetime | None
    refresh_expires_at: datetime | None


async def list_grants(session: AsyncSession, customer_id: int) -> list[GrantView]:
    rows = await session.execute(
        select(OAuthGrant, ApiKey.scopes, ApiKey.last_used_at)
        .join(ApiKey, ApiKey.id == OAuthGrant.api_key_id)
        .where(OAuthGrant.customer_id == customer_id, OAuthGrant.revoked_at.is_(None))
        .order_by(OAuthGrant.created_at.desc())
    )
    grants = rows.all()
    expiry: dict[uuid.UUID, datetime] = {}
    if grants:
        tokens = await session.execute(
            select(OAuthToken.grant_id, OAuthToken.expires_at).where(
                OAuthToken.grant_id.in_([g.id for g, _, _ in grants]),
                OAuthToken.kind == "refresh",
                OAuthToken.revoked_at.is_(None),
            )
        )
        for grant_id, expires_at in tokens.all():
            expiry[grant_id] = max(expires_at, expiry.get(grant_id, expires_at))
    return [
        GrantView(
            g.id,
            g.api_key_id,
            g.client_id,
            g.client_name,
            list(scopes),
            g.confirm_spending,
            g.created_at,
            last_used,
            expiry.get(g.id),
        )
        for g, scopes, last_used in grants
    ]
