"""The authorization server's and the protected resource's HTTP endpoints, from the MCP SDK's handlers.

- `/.well-known/oauth-authorization-server` (RFC 8414): issuer = the public base URL, PKCE S256 only,
  client ID metadata documents supported, public clients (`none`) and secret clients (DCR).
- `/.well-known/oauth-protected-resource` and `.../api/v1/mcp` (RFC 9728): the MCP endpoint's metadata.
- `/oauth/authorize` (redirects to the dashboard's consent page), `/oauth/token`, `/oauth/register`
  (RFC 7591), `/oauth/revoke` (RFC 7009)."""

from __future__ import annotations

from fastapi import FastAPI
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from starlette.routing import Route

from proxyplane.adapters.oauth.provider import MCP_PATH, Provider, mcp_resource
from proxyplane.adapters.oauth.revoke import Revocation
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.platform import Platform

AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
PRM_PATH = "/.well-known/oauth-protected-resource"
AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REGISTER_PATH = "/oauth/register"
REVOKE_PATH = "/oauth/revoke"
SCOPES = sorted(ALL_SCOPES)
AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]


def as_metadata(platform: Platform) -> OAuthMetadata:
    base = platform.settings.base_url()
    return OAuthMetadata.model_validate(  # strings: the models keep a root URL without its slash
        dict(
            issuer=base,
            authorization_endpoint=base + AUTHORIZE_PATH,
            token_endpoint=base + TOKEN_PATH,
            registration_endpoint=base + REGISTER_PATH,
            revocation_endpoint=base + REVOKE_PATH,
            revocation_endpoint_auth_methods_supported=AUTH_METHODS,
            scopes_supported=SCOPES,
            response_types_supported=["code"],
            grant_types_supported=["authorization_code", "refresh_token"],
            token_endpoint_auth_methods_supported=AUTH_METHODS,
            code_challenge_methods_supported=["S256"],
            client_id_metadata_document_supported=True,
            authorization_response_iss_parameter_supported=True,
            service_documentation=base + "/api/v1/docs",
        )
    )


def resource_metadata(platform: Platform) -> ProtectedResourceMetadata:
    return ProtectedResourceMetadata.model_validate(
        dict(
            resource=mcp_resource(platform),
            authorization_servers=[platform.settings.base_url()],
            scopes_supported=SCOPES,
            resource_name="ProxyPlane MCP server",
            resource_documentation=platform.settings.base_url() + "/api/v1/docs",
        )
    )


def resource_metadata_url(platform: Platform) -> str:
    """The path-suffixed RFC 9728 URL named in the MCP endpoint's `WWW-Authenticate`."""
    return platform.settings.base_url() + PRM_PATH + MCP_PATH


def install_oauth(app: FastAPI, platform: Platform) -> None:
    provider = Provider(platform)
    authenticator = ClientAuthenticator(provider)
    registration = ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES)
    as_handler = MetadataHandler(as_metadata(platform))
    prm_handler = ProtectedResourceMetadataHandler(resource_metadata(platform))

    routes = [
        Route(
            AS_METADATA_PATH,
            cors_middleware(as_handler.handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route(PRM_PATH, cors_middleware(prm_handler.handle, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"]),
        Route(
            PRM_PATH + MCP_PATH,
            cors_middleware(prm_handler.handle, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        Route(
            AUTHORIZE_PATH,
            AuthorizationHandler(provider).handle,
            methods=["GET", "POST"],
        ),
        Route(
            TOKEN_PATH,
            cors_middleware(TokenHandler(provider, authenticator).handle, ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            REGISTER_PATH,
            cors_middleware(RegistrationHandler(provider, registration).handle, ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            REVOKE_PATH,
            cors_middleware(Revocation(provider, authenticator).handle, ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
    ]
    app.router.routes.extend(routes)
