"""The MCP server at /api/v1/mcp (Streamable HTTP, official `mcp` SDK), mounted in the FastAPI app.

Every request passes the API-key gate first: the same `authenticate()` as REST, with the client IP;
no key, or an unknown or revoked one, is HTTP 401 with the REST error body. Scopes are checked per tool
call by `invoke()`, exactly as for REST."""

from __future__ import annotations

import json

from fastapi import FastAPI
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from proxyplane.adapters.mcp.limits import register_limits_resource
from proxyplane.adapters.mcp.listen import AccountBus, ListenerAccount
from proxyplane.adapters.mcp.relay import Relay
from proxyplane.adapters.mcp.sessions import MAX_SESSIONS, SESSION_IDLE_SECONDS, EraRouter, ProxyPlaneMCP
from proxyplane.adapters.mcp.shared_sessions import SharedSessions
from proxyplane.adapters.mcp.subsets import ToolSubset
from proxyplane.adapters.mcp.tools import PRINCIPAL, build_tools, caller_from, served_operations
from proxyplane.core.errors import Unauthorized
from proxyplane.domains.apikeys.service import authenticate
from proxyplane.domains.oauth.service import authenticate_token, refused_bearer
from proxyplane.operations import REGISTRY
from proxyplane.ops import Operation
from proxyplane.platform import Platform

MCP_PATH = "/api/v1/mcp"
INSTRUCTIONS = (
    "ProxyPlane: buy and manage proxies. Money is integer cents (USD). Purchases are paid from the "
    "wallet balance only; tools that spend need an idempotency_key and a price guard. Each tool lists "
    "the API-key scopes it needs. Start with whoami to see your key's scopes."
)


def build_server(platform: Platform, registry: dict[str, Operation] | None = None) -> ProxyPlaneMCP:
    """A fresh server with one tool per registry operation (its session manager runs once); `?tools=`
    and `?scopes=granted` pick a subset per request (subsets.py)."""
    ops = REGISTRY if registry is None else registry
    bus = AccountBus()  # subscriptions/listen streams per account (listen.py)
    server = ProxyPlaneMCP(
        "proxyplane",
        title="ProxyPlane",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=build_tools(platform, ops),
        log_level="WARNING",
        middleware=[ToolSubset(served_operations(ops)), ListenerAccount(PRINCIPAL)],
        subscriptions=bus,
    )
    server.account_bus = bus
    register_limits_resource(server, platform, caller_from)
    return server


class ApiKeyGate:
    """Pure ASGI: authenticate `Authorization: Bearer <API_KEY>` before the MCP transport sees the request."""

    def __init__(self, app: ASGIApp, platform: Platform) -> None:
        self.app = app
        self.platform = platform

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        ip = client[0] if client else ""
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        principal = None
        if scheme.lower() == "bearer" and token.strip():
            principal = await authenticate(self.platform.db, token.strip(), ip)
            if principal is None:  # OAuth 2.1 access token for this resource (issue 21.2, engineer F)
                resource = self.platform.settings.base_url() + MCP_PATH
                principal = await authenticate_token(self.platform.db, token.strip(), resource)
        if principal is None:
            message = (
                refused_bearer(token.strip(), oauth_accepted=True)
                if token.strip()
                else "an API key is required: send Authorization: Bearer <API_KEY>"
            )
            prm = self.platform.settings.base_url() + "/.well-known/oauth-protected-resource" + MCP_PATH
            await _send_401(send, message, prm, bool(token.strip()))
            return
        scope = dict(scope, state={**scope.get("state", {}), PRINCIPAL: principal})
        await self.app(scope, receive, send)


async def _send_401(send: Send, message: str, resource_metadata: str, token_sent: bool) -> None:
    body = json.dumps({"detail": Unauthorized(message).body()}).encode()
    # RFC 9728 5.1: where the client finds the authorization server (OAuth 2.1, issue 21.2)
    challenge = ('Bearer error="invalid_token", ' if token_sent else "Bearer ") + (
        f'resource_metadata="{resource_metadata}"'
    )
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BarePathToMount:
    """Pure ASGI: `/api/v1/mcp` → `/api/v1/mcp/` before routing, so the mount answers without a 307."""

    def __init__(self, app: ASGIApp, prefix: str) -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.prefix:
            path = self.prefix + "/"
            scope = dict(scope, path=path, raw_path=path.encode())
        await self.app(scope, receive, send)


def mount_mcp(
    app: FastAPI, platform: Platform, registry: dict[str, Operation] | None = None
) -> ProxyPlaneMCP:
    """Mount the MCP endpoint; the caller's lifespan must enter `server.run_sessions()`."""
    server = build_server(platform, registry)
    # Bearer keys are the only credential (no cookies), so a rebinding page gains nothing; behind
    # a proxy the Host is the public name, which this check would refuse with 421.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    stateless = server.streamable_http_app(  # everything else; `server.session_manager` from here on
        streamable_http_path="/", stateless_http=True, transport_security=security
    )
    # 2025-11-25 clients that can be asked (sessions.py), their sessions in the store (shared_sessions.py)
    server.relay = Relay(platform, SESSION_IDLE_SECONDS)
    server.account_bus.share(server.relay)
    server.sessions = SharedSessions(
        server.session_manager.app,
        security_settings=security,
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_sessions=MAX_SESSIONS,
        relay=server.relay,
    )
    stateful = server.sessions.handle_request
    app.mount(MCP_PATH, ApiKeyGate(EraRouter(stateless, stateful, PRINCIPAL), platform))
    app.add_middleware(BarePathToMount, prefix=MCP_PATH)
    app.state.mcp = server
    return server
