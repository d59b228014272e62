"""Sessions only where the server must ask (issue 21.3): a 2025-11-25 client that declares the elicitation
capability at `initialize` gets a stateful Streamable HTTP session (an `Mcp-Session-Id`), so a spending tool
can send it `elicitation/create` and wait for the answer on the session's back channel. Every other request
stays on the stateless path as before: 2025-11-25 clients without elicitation, and the whole 2026-07-28 era
(whose stateless core asks through `InputRequiredResult`).

Sessions are shared by the API processes (issue 35.3: shared_sessions.py keeps them in the store, relay.py
passes answers and events between the processes): a balancer may send any request to any process, no
sticky routing, and a restarted process serves its sessions again."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import ServerEvent
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proxyplane.core.text_input import JsonRefused, check_json

SESSION_IDLE_SECONDS = 10 * 60  # a confirming agent answers within minutes; idle sessions end
MAX_SESSIONS = 1000  # per process; more asking clients at once get 503 (the stateless path is unaffected)


class ProxyPlaneMCP(MCPServer[Any]):
    """The MCP server with its two session managers: stateless (every request) and stateful (asking
    2025-11-25 clients). `run_sessions()` runs both in the app's lifespan."""

    sessions: StreamableHTTPSessionManager | None = None
    account_bus: Any = None  # listen.AccountBus: `publish_to(customer_id, event)`
    relay: Any = None  # relay.Relay: this process's side of the messages between API processes

    async def publish_to(self, customer_id: int, event: ServerEvent) -> None:
        if self.account_bus is not None:
            await self.account_bus.publish_to(customer_id, event)

    @contextlib.asynccontextmanager
    async def run_sessions(self) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self.session_manager.run())
            if self.sessions is not None:
                await stack.enter_async_context(self.sessions.run())
            if self.relay is not None:
                group = await stack.enter_async_context(anyio.create_task_group())
                group.start_soon(self.relay.run)
                stack.callback(group.cancel_scope.cancel)
            yield


def asks_for_session(body: bytes) -> bool:
    """An `initialize` whose capabilities declare elicitation (any mode: `{}` is form)."""
    if b'"initialize"' not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return False
    params = message.get("params")
    capabilities = params.get("capabilities") if isinstance(params, dict) else None
    return isinstance(capabilities, dict) and isinstance(capabilities.get("elicitation"), dict)


class EraRouter:
    """Pure ASGI, behind the API-key gate: requests of a session (`Mcp-Session-Id`) and an asking
    2025-11-25 `initialize` go to the stateful app; everything else to the stateless app."""

    def __init__(self, stateless: ASGIApp, stateful: ASGIApp, principal_key: str) -> None:
        self.stateless = stateless
        self.stateful = stateful
        self.principal_key = principal_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.stateless(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.lower())
        body: bytes | None = None
        if scope["method"] == "POST":  # every message checked before the SDK parses it (check_json)
            body, receive = await _buffer(receive)
            if body is not None and await _refused(body, send):
                return
        if MCP_SESSION_ID_HEADER in headers:
            await self.stateful(self._owned(scope), receive, send)
            return
        handshake = version is None or version in HANDSHAKE_PROTOCOL_VERSIONS
        if scope["method"] != "POST" or not handshake:
            await self.stateless(scope, receive, send)
            return
        replay = receive
        app = self.stateful if body is not None and asks_for_session(body) else self.stateless
        await app(self._owned(scope) if app is self.stateful else scope, replay, send)

    def _owned(self, scope: Scope) -> Scope:
        """The SDK binds a session to the credential that opened it (`scope["user"]`): here the API key
        (or OAuth grant) id, so another key cannot use, or answer questions of, someone's session."""
        principal = (scope.get("state") or {}).get(self.principal_key)
        if principal is None:
            return scope
        token = AccessToken(
            token="-", client_id=str(principal.key_id), scopes=[], subject=str(principal.customer_id)
        )
        return dict(scope, user=AuthenticatedUser(token))


async def _refused(body: bytes, send: Send) -> bool:
    """Answer a JSON-RPC parse error (400, as the SDK answers a body it cannot parse) when the message
    nests too deep or holds a number too long (core/text_input.check_json: the REST door's limits)."""
    try:
        check_json(body)
    except JsonRefused as exc:
        error = {"code": -32700, "message": f"Parse error: {exc}", "data": {"type": exc.kind}}
        payload = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
        return True
    return False


async def _buffer(receive: Receive) -> tuple[bytes | None, Receive]:
    """Read the request body (up to the SDK's body limit) and a `receive` that replays it. None when the
    body is larger than the limit (the transport then refuses it with 413, as without this router)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE or not message.get("more_body", False):
            break
    complete = messages[-1]["type"] == "http.request" and not messages[-1].get("more_body", False)
    body = b"".join(m.get("body", b"") for m in messages) if complete else None

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay
