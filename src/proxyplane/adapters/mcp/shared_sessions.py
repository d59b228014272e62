"""2025-11-25 sessions any API process serves (issue 35.3): the SDK's stateful session manager, with each
session recorded in the store when its `initialize` succeeds. A request carrying an `Mcp-Session-Id` this
process does not hold is looked up there and, for the key that opened it, served by a copy of the
session built from what its `initialize` negotiated (protocol version, client capabilities): so a
balancer may send a client's requests to any process, and a restarted process serves its sessions again.

A question (`elicitation/create`) goes out on the stream of the tool call that asks it, from the process
running the call; its id names that process (`<token>-<n>`). The client's answer may reach another
process: that one passes it through the relay (relay.py) to the asking process, which hands it to its
own copy of the session, where the call is waiting. A DELETE ends the session in the store and, through
the relay, every process's copy. Sessions idle longer than SESSION_IDLE_SECONDS end everywhere (the
store's `seen_at`, refreshed at most every TOUCH_SECONDS by whichever process serves the session)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import InitializeRequestParams
from starlette.types import Message, Receive, Scope, Send

from proxyplane.adapters.mcp.relay import Relay
from proxyplane.domains.agent import mcp_state

log = logging.getLogger(__name__)
TOUCH_SECONDS = 30.0


class _ProcessIds(JSONRPCDispatcher[TransportContext]):
    """A session's dispatcher whose own request ids name this process (`<token>-<n>`), so an answer
    reaching another process finds its way back, and two processes' copies of one session never send
    the same id."""

    def __init__(self, *args: Any, prefix: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._prefix = prefix
        self._count = 0

    def _allocate_id(self) -> str:  # type: ignore[override]  # the SDK's ids are ints; strings are allowed
        self._count += 1
        return f"{self._prefix}{self._count}"


def _owner(scope: Scope) -> str:
    user = scope.get("user")
    return authorization_context(user)["client_id"] if isinstance(user, AuthenticatedUser) else ""


def _customer(scope: Scope) -> int | None:
    user = scope.get("user")
    subject = user.access_token.subject if isinstance(user, AuthenticatedUser) else None
    return int(subject) if subject and subject.isdigit() else None


class SharedSessions(StreamableHTTPSessionManager):
    """The stateful manager, its sessions in the store (see the module docstring)."""

    def __init__(self, *args: Any, relay: Relay, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.relay = relay
        self._connections: dict[str, Connection] = {}
        self._touched: dict[str, float] = {}
        relay.handlers["reply"] = self._deliver_reply
        relay.handlers["closed"] = self._closed_elsewhere

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        if session_id is None:
            await super()._handle_stateful_request(scope, receive, send)
            return
        if session_id not in self._server_instances:
            await self._restore(session_id, scope)
        known = session_id in self._server_instances
        if known and self._session_owners.get(session_id) is not None:
            if self._session_owners[session_id]["client_id"] != _owner(scope):
                known = False  # the SDK answers 404 below, as for a session that does not exist
        if known and scope["method"] == "POST":
            body, receive = await _read(receive)
            target = _answer_for(body)
            if target is not None and target != self.relay.token:
                await self._relay_answer(session_id, target, body, headers, send)
                return
        if known and scope["method"] == "DELETE":  # ended in the store before the client hears so
            ref = mcp_state.SessionRef(session_id=session_id, origin=self.relay.token)
            await self.relay.call(mcp_state.END, ref)
        elif known and time.monotonic() - self._touched.get(session_id, 0.0) > TOUCH_SECONDS:
            self._touched[session_id] = time.monotonic()
            try:
                await self.relay.call(mcp_state.TOUCH, mcp_state.SessionRef(session_id=session_id))
            except Exception:  # the store is down: this copy serves on; the next request touches again
                self._touched[session_id] = 0.0
                log.info("MCP session %s: seen_at not refreshed", session_id[:12], exc_info=True)
        await super()._handle_stateful_request(scope, receive, send)

    async def _restore(self, session_id: str, scope: Scope) -> None:
        """A copy of a session another process (or this one before a restart) opened, for its owner."""
        idle = float(self.session_idle_timeout or 600)
        found = await self.relay.call(
            mcp_state.FIND, mcp_state.SessionRef(session_id=session_id, idle_seconds=idle)
        )
        if not found.found or found.owner != _owner(scope):
            return
        params = InitializeRequestParams.model_validate(found.client)
        async with self._session_creation_lock:
            if session_id in self._server_instances:
                return
            transport = self._transport(session_id)
            user = scope.get("user")
            if isinstance(user, AuthenticatedUser):
                self._session_owners[session_id] = authorization_context(user)
            self._server_instances[session_id] = transport
        self._touched[session_id] = time.monotonic()
        assert self._task_group is not None
        await self._task_group.start(self._run_session, transport, (params, found.protocol_version))
        log.info("MCP session %s restored from the store", session_id[:12])

    def _transport(self, session_id: str) -> StreamableHTTPServerTransport:
        return StreamableHTTPServerTransport(
            mcp_session_id=session_id,
            is_json_response_enabled=self.json_response,
            event_store=self.event_store,
            security_settings=self.security_settings,
            retry_interval=self.retry_interval,
            idle_timeout=self.session_idle_timeout,
        )

    async def _serve_opening_request(
        self, http_transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """As the SDK's (its server task, the request that opens it), with this process's request ids;
        an established session is recorded in the store."""
        session_id = http_transport.mcp_session_id
        assert session_id is not None and self._task_group is not None
        established = False
        try:
            await self._task_group.start(self._run_session, http_transport, None)
            status: list[int] = []

            async def watch(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status.append(message["status"])
                await send(message)

            await http_transport.handle_request(scope, receive, watch)
            connection = self._connections.get(session_id)
            established = bool(status) and status[0] < 400
            if established and connection is not None and connection.client_params is not None:
                client = connection.client_params.model_dump(by_alias=True, mode="json", exclude_none=True)
                opened = mcp_state.SessionOpened(
                    session_id=session_id,
                    owner=_owner(scope),
                    customer_id=_customer(scope),
                    protocol_version=connection.protocol_version,
                    client=client,
                )
                self._touched[session_id] = time.monotonic()
                try:
                    await self.relay.call(mcp_state.OPEN, opened)
                except Exception:  # the store is down: the session lives here only (until it ends)
                    log.warning("MCP session %s not recorded in the store", session_id[:12], exc_info=True)
        finally:
            if not established:
                await self._discard_session(session_id, http_transport)

    async def _run_session(
        self,
        transport: StreamableHTTPServerTransport,
        restored: tuple[InitializeRequestParams, str] | None,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        session_id = transport.mcp_session_id
        assert session_id is not None
        async with transport.connect() as (read_stream, write_stream):
            dispatcher = _ProcessIds(
                read_stream,
                write_stream,
                inline_methods=frozenset({"initialize"}),
                prefix=f"{self.relay.token}-",
            )
            connection = Connection.for_loop(dispatcher, session_id=session_id)
            if restored is not None:  # as its initialize left it
                connection.client_params, connection.protocol_version = restored
                connection.initialized.set()
            self._connections[session_id] = connection
            task_status.started()
            try:
                idle_scope = transport.idle_scope or anyio.CancelScope()
                with idle_scope:
                    await serve_connection(
                        self.app, dispatcher, connection=connection, lifespan_state=self._lifespan_state
                    )
                if idle_scope.cancelled_caught:
                    log.info("MCP session %s idle here", session_id[:12])
            except Exception:
                log.exception("MCP session %s crashed", session_id[:12])
            finally:
                self._connections.pop(session_id, None)
                self._touched.pop(session_id, None)
                await self._discard_session(session_id, transport)

    async def _relay_answer(
        self, session_id: str, target: str, body: bytes, headers: dict[str, str], send: Send
    ) -> None:
        """An answer to a question another process asked: to that process; 202 as the transport answers."""
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER.lower(), "")
        await self.relay.send(
            "reply", target, {"session": session_id, "version": version, "message": body.decode()}
        )
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def _deliver_reply(self, message: mcp_state.RelayMessage) -> None:
        body = message.body or {}
        if message.target != self.relay.token:
            return
        transport = self._server_instances.get(str(body.get("session")))
        if transport is None:  # the session's copy here ended (the asking call with it)
            return
        await transport.handle_request(
            *_post(str(body["session"]), str(body.get("version") or ""), str(body["message"]))
        )

    async def _closed_elsewhere(self, message: mcp_state.RelayMessage) -> None:
        transport = self._server_instances.get(message.target)
        if transport is not None:
            await self._discard_session(message.target, transport)


def _answer_for(body: bytes | None) -> str | None:
    """The process an answer (a JSON-RPC response without a method) is for, by its id's prefix."""
    if not body or b'"method"' in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" in message or not isinstance(message.get("id"), str):
        return None
    token, dash, _ = message["id"].partition("-")
    return token if dash and len(token) == 12 else None


async def _read(receive: Receive) -> tuple[bytes, Receive]:
    """The body (already read and bounded by the router in front) and a `receive` replaying it."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    body = b"".join(m.get("body", b"") for m in messages)

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return body, replay


def _post(session_id: str, version: str, body: str) -> tuple[Scope, Receive, Send]:
    """A POST of a relayed answer to this process's copy of the session (its 202 goes nowhere)."""
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (MCP_SESSION_ID_HEADER.encode(), session_id.encode()),
    ]
    if version:
        headers.append((MCP_PROTOCOL_VERSION_HEADER.lower().encode(), version.encode()))
    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        "scheme": "http",
        "http_version": "1.1",
    }
    sent = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive() -> Message:
        return sent.pop(0) if sent else {"type": "http.disconnect"}

    async def send(_: Message) -> None:
        return None

    return scope, receive, send
