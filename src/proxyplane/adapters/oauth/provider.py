"""The MCP SDK's authorization-server provider protocol (`mcp.server.auth.provider`) over domains/oauth.

The SDK's handlers do the protocol mechanics (request validation, PKCE S256 check, redirect URI match,
client authentication, error bodies); this class stores and looks things up, one unit of work per call."""

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
from pydantic import AnyUrl

from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.domains.oauth import clients, service
from proxyplane.platform import Platform

log = logging.getLogger("proxyplane.oauth")
MCP_PATH = "/api/v1/mcp"  # adapters/mcp/server.py MCP_PATH (adapters do not import each other)
CONSENT_PATH = "/oauth/consent"  # the dashboard's consent page (adapters/web/consent.py)
FETCH_TIMEOUT = 5.0


def mcp_resource(platform: Platform) -> str:
    return platform.settings.base_url() + MCP_PATH


class Provider:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.box = platform.secrets

    # clients -----------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        async with self.platform.db.unit_of_work(write=False) as uow:
            known = await clients.cached_client(uow.session, client_id)
        if known is not None:
            kind, metadata = known
            if kind == "dcr" and metadata.get("client_secret"):
                metadata = {**metadata, "client_secret": self.box.decrypt(metadata["client_secret"])}
        elif clients.is_url_client_id(client_id):
            try:
                metadata = await self._fetch_document(client_id)
            except (clients.ClientDocumentError, httpx.HTTPError) as exc:
                log.warning("client ID metadata document %s refused: %s", client_id, exc)
                return None
            async with self.platform.db.unit_of_work() as uow:
                await clients.store_client(uow.session, client_id, "cimd", metadata)
                await uow.commit()
        else:
            return None
        return OAuthClientInformationFull.model_validate({**metadata, "scope": " ".join(sorted(ALL_SCOPES))})

    async def _fetch_document(self, client_id: str) -> dict[str, Any]:
        clients.check_client_id_url(client_id, self.platform.settings.oauth_allow_http_client_ids)
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False) as http:
            async with http.stream("GET", client_id, headers={"Accept": "application/json"}) as response:
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
        if metadata.get("client_secret"):
            metadata["client_secret"] = self.box.encrypt(metadata["client_secret"])
        async with self.platform.db.unit_of_work() as uow:
            await clients.store_client(uow.session, client_info.client_id, "dcr", metadata)
            await uow.commit()

    # authorization -------------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        resource = mcp_resource(self.platform)
        if params.resource is not None and params.resource.rstrip("/") != resource:
            raise AuthorizeError("invalid_target", f"this server issues tokens only for {resource}")
        async with self.platform.db.unit_of_work() as uow:
            request_id = await service.start_request(
                uow.session,
                client.client_id,
                str(params.redirect_uri),
                params.redirect_uri_provided_explicitly,
                params.state,
                params.code_challenge,
                params.scopes or [],
                resource,
            )
            await uow.commit()
        return f"{CONSENT_PATH}?request={request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        async with self.platform.db.unit_of_work(write=False) as uow:
            row = await service.code_request(uow.session, client.client_id, authorization_code)
        if row is None:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(row.scopes),
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
        async with self.platform.db.unit_of_work() as uow:
            issued = await service.exchange_code(uow.session, authorization_code.code)
            await uow.commit()
        if issued is None:
            raise TokenError("invalid_grant", "authorization code was already used or its grant ended")
        return _token(issued)

    # tokens ----------------------------------------------------------------------------------------
    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        async with self.platform.db.unit_of_work() as uow:
            info = await service.token_info(uow.session, refresh_token, "refresh")
            if info is None:
                if await service.refresh_replayed(uow.session, refresh_token):
                    await uow.commit()
                return None
        if info.client_id != client.client_id:
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
        async with self.platform.db.unit_of_work() as uow:
            issued = await service.rotate_refresh(uow.session, refresh_token.token, scopes)
            await uow.commit()
        if issued is None:
            raise TokenError("invalid_grant", "refresh token was already used; the grant has ended")
        return _token(issued)

    async def load_access_token(self, token: str) -> AccessToken | None:
        async with self.platform.db.unit_of_work(write=False) as uow:
            info = await service.token_info(uow.session, token, "access")
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
        async with self.platform.db.unit_of_work() as uow:
            await service.revoke_token(uow.session, token.token)
            await uow.commit()

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: Any
    ) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "the JWT bearer grant is not supported")


def _token(issued: service.IssuedTokens) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes),
        refresh_token=issued.refresh_token,
    )
