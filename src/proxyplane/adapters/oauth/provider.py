"""The MCP SDK's authorization-server provider protocol (`mcp.server.auth.provider`) over the registry.

The SDK's handlers do the protocol mechanics (request validation, PKCE S256 check, redirect URI match,
client authentication, error bodies); this class translates each look-up and change into a registered
operation of the "oauth" door (`domains/oauth/ops.py`) run through `invoke` (one unit of work, one commit),
and fetches client ID metadata documents (the I/O; the validated result is stored by an operation)."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl, ValidationError

from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.domains.oauth import clients
from proxyplane.domains.oauth.ops import Tokens
from proxyplane.domains.webhooks import targets
from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

log = logging.getLogger("proxyplane.oauth")
MCP_PATH = "/api/v1/mcp"  # adapters/mcp/server.py MCP_PATH (adapters do not import each other)
CONSENT_PATH = "/oauth/consent"  # the dashboard's consent page (adapters/web/consent.py)
FETCH_TIMEOUT = 5.0
CALLER = Caller.anonymous(channel="oauth")  # the client was authenticated by the SDK's handlers


def mcp_resource(platform: Platform) -> str:
    return platform.settings.base_url() + MCP_PATH


class BadInput(ValueError):
    """A value the operation's input model refuses (e.g. a NUL character)."""


class Provider:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    async def run(self, name: str, **fields: Any) -> Any:
        """Invoke the "oauth" door's operation `name` with `fields` as its input."""
        op = REGISTRY[name]
        assert op.input is not None
        try:
            data = op.input.model_validate(fields)
        except ValidationError as exc:
            raise BadInput(str(exc)) from None
        return await invoke(self.platform, op, CALLER, data)

    # clients -----------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        try:
            known = await self.run("oauth_client", client_id=client_id)
        except BadInput:
            return None
        if known is not None:
            metadata = known.metadata
        elif clients.is_url_client_id(client_id):
            try:
                metadata = await self._fetch_document(client_id)
            except (clients.ClientDocumentError, httpx.HTTPError) as exc:
                log.warning("client ID metadata document %s refused: %s", client_id, exc)
                return None
            await self.run("oauth_store_client_document", client_id=client_id, metadata=metadata)
        else:
            return None
        return OAuthClientInformationFull.model_validate({**metadata, "scope": " ".join(sorted(ALL_SCOPES))})

    async def _fetch_document(self, client_id: str) -> dict[str, Any]:
        allow_loopback = self.platform.settings.oauth_allow_http_client_ids
        clients.check_client_id_url(client_id, allow_loopback)
        # anyone's input (no sign-in on /oauth/authorize): the webhooks' rule, public addresses only, checked
        # before connecting and pinned (no second DNS answer); decisions/security-review.md
        try:
            target = await targets.resolve(client_id, allow_loopback)
        except targets.TargetRefused as exc:
            raise clients.ClientDocumentError(str(exc)) from None
        sni = target.scheme == "https" and target.host not in target.addresses
        headers = {"Accept": "application/json", "Host": target.host_header}
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False, trust_env=False) as http:
            async with http.stream(
                "GET",
                target.pinned_url(client_id),
                headers=headers,
                extensions={"sni_hostname": target.host} if sni else {},
            ) as response:
                if response.status_code != 200:
                    raise clients.ClientDocumentError(f"HTTP {response.status_code}")
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > clients.MAX_DOCUMENT_BYTES:
                        break
        return clients.validate_document(client_id, body)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """RFC 7591 (for clients without a metadata document); a client secret is stored encrypted."""
        metadata = json.loads(client_info.model_dump_json(exclude_none=True))
        await self.run("oauth_register_client", client_id=client_info.client_id, metadata=metadata)

    # authorization -------------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        resource = mcp_resource(self.platform)
        if params.resource is not None and params.resource.rstrip("/") != resource:
            raise AuthorizeError("invalid_target", f"this server issues tokens only for {resource}")
        try:
            started = await self.run(
                "oauth_authorize",
                client_id=client.client_id,
                redirect_uri=str(params.redirect_uri),
                redirect_uri_explicit=params.redirect_uri_provided_explicitly,
                state=params.state,
                code_challenge=params.code_challenge,
                scopes=params.scopes or [],
                resource=resource,
            )
        except BadInput:
            raise AuthorizeError("invalid_request", "the authorization request has a refused value") from None
        return f"{CONSENT_PATH}?request={started.request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        try:
            row = await self.run("oauth_code", client_id=client.client_id, code=authorization_code)
        except BadInput:
            return None
        if row is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=row.scopes,
            expires_at=row.expires_at.timestamp(),
            client_id=row.client_id,
            code_challenge=row.code_challenge,
            redirect_uri=AnyUrl(row.redirect_uri),
            redirect_uri_provided_explicitly=row.redirect_uri_explicit,
            resource=row.resource,
            subject=str(row.customer_id),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        issued = await self.run("oauth_exchange_code", code=authorization_code.code)
        if issued is None:
            raise TokenError("invalid_grant", "authorization code was already used or its grant ended")
        return _token(issued)

    # tokens ----------------------------------------------------------------------------------------
    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        try:
            info = await self.run("oauth_refresh_token", client_id=client.client_id, token=refresh_token)
        except BadInput:
            return None
        if info is None:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=info.client_id,
            scopes=info.scopes,
            expires_at=int(info.expires_at.timestamp()),
            resource=info.resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        issued = await self.run("oauth_rotate_refresh_token", token=refresh_token.token, scopes=scopes)
        if issued is None:
            raise TokenError("invalid_grant", "refresh token was already used; the grant has ended")
        return _token(issued)

    async def load_access_token(self, token: str) -> AccessToken | None:
        try:
            info = await self.run("oauth_access_token", token=token)
        except BadInput:
            return None
        if info is None:
            return None
        return AccessToken(
            token=token,
            client_id=info.client_id,
            scopes=info.scopes,
            expires_at=int(info.expires_at.timestamp()),
            resource=info.resource,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self.run("oauth_revoke", token=token.token)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not supported")


def _token(issued: Tokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes),
        refresh_token=issued.refresh_token,
    )
