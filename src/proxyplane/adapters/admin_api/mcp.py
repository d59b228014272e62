"""The operator MCP endpoint at /api/admin/v1/mcp (issue 33): the operator API's operations as MCP tools
(Streamable HTTP, the official `mcp` SDK, stateless), generated from the same registry entries as the
REST routes beside it: one tool per operation the "admin_api" door serves, its name, input schema, effect
and permission from the Operation. Auth is the operator API's: `Authorization: Bearer ppo_...` (no key
or an unknown one: HTTP 401 before the transport). A tool call runs `invoke` with the key's role (door
"admin_mcp" in the audit log), so a role without the permission gets the 403 answer naming it, as an
error result. A write takes an optional `idempotency_key`: the same key sent again acts once (the audit
row's unique key, as the REST door's Idempotency-Key header)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context as MCPContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from proxyplane.core.errors import DomainError, Unauthorized
from proxyplane.domains.operators.auth import OperatorPrincipal, by_key
from proxyplane.ops import Caller, Effect, Operation, invoke, served
from proxyplane.platform import Platform

DOOR = "admin_mcp"  # the audit log's door for a tool call
PRINCIPAL = "proxyplane_operator"  # key in the ASGI scope state, set by the key gate
KEY_FIELD = "idempotency_key"
INSTRUCTIONS = (
    "ProxyPlane operator tools: the operator API as MCP tools. Money is integer cents (USD). Each tool "
    "names the permission it needs; your key's role decides (a refusal names the missing permission). "
    "Every write is recorded in the audit log; send an idempotency_key with a write so that a retry "
    "acts once."
)


class ToolArguments(ArgModelBase):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def argument_model(op: Operation) -> type[ArgModelBase]:
    assert op.input is not None, op.name
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in op.input.model_fields.items()}
    if op.effect != Effect.READ and KEY_FIELD not in fields:
        fields[KEY_FIELD] = (
            str,
            Field(
                default="",
                max_length=150,
                description="a key of your choosing: the same write sent again with it acts once",
            ),
        )
    name = "".join(p.capitalize() for p in op.name.split("_")) + "Arguments"
    return create_model(name, __base__=ToolArguments, **fields)


def description(op: Operation) -> str:
    effect = "read-only; changes nothing" if op.effect == Effect.READ else "changes state; audited"
    if op.effect == Effect.SPENDS_MONEY:
        effect = "moves money; audited"
    return f"{op.summary}. Permission: {op.permission}. Effect: {effect}."


def error_result(exc: DomainError) -> CallToolResult:
    details = {k: v for k, v in exc.extra.items() if k != "errors"}
    text = f"{exc.code}: {exc.message}"
    if details:
        text += " (" + ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in details.items()) + ")"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def caller_from(context: MCPContext[Any, Any]) -> Caller:
    request = context.request_context.request
    scope: dict[str, Any] = getattr(request, "scope", {}) or {}
    principal: OperatorPrincipal | None = (scope.get("state") or {}).get(PRINCIPAL)
    client = scope.get("client")
    if principal is None:  # the gate lets no request through without one
        raise Unauthorized("an operator API key is required: send Authorization: Bearer ppo_...")
    return Caller(
        customer_id=None,
        client_ip=client[0] if client else "",
        channel=DOOR,
        user_agent=(context.headers or {}).get("user-agent", "")[:300],
        operator_id=principal.operator_id,
        role=principal.role,
        actor=principal.email,
    )


def build_tool(platform: Platform, op: Operation) -> Tool:
    args = argument_model(op)
    read = op.effect == Effect.READ

    async def run(mcp_context: MCPContext[Any, Any], **arguments: Any) -> CallToolResult:
        key = str(arguments.pop(KEY_FIELD, "") or "") if not read else ""
        try:
            caller = caller_from(mcp_context)
            assert op.input is not None
            data: BaseModel = op.input.model_validate(arguments)
            door_key = f"mcp:{caller.operator_id}:{op.name}:{key}" if key else None
            result = await invoke(platform, op, caller, data, door_key=door_key)
        except DomainError as exc:
            return error_result(exc)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            text = f"validation_error: {problems}. Nothing was done."
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        content = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        if not isinstance(content, dict):
            content = {"result": content}
        text = json.dumps(content, ensure_ascii=False, default=str)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=content)

    run.__name__ = op.name
    return Tool(
        fn=run,
        name=op.name,
        title=op.name.removeprefix("operator_").replace("_", " ").capitalize(),
        description=description(op),
        parameters=args.model_json_schema(by_alias=True),
        fn_metadata=FuncMetadata(arg_model=args),
        is_async=True,
        context_kwarg="mcp_context",
        annotations=ToolAnnotations(
            read_only_hint=read,
            destructive_hint=False if read else op.name.endswith(("refund", "lock", "retire", "debit")),
            idempotent_hint=read,
            open_world_hint=False,
        ),
        meta={"proxyplane/permission": op.permission, "proxyplane/effect": op.effect.value},
    )


def build_server(platform: Platform, registry: dict[str, Operation]) -> MCPServer[Any]:
    tools = [build_tool(platform, op) for op in served("admin_api", registry).values()]
    return MCPServer(
        "proxyplane-operator",
        title="ProxyPlane operator",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=tools,
        log_level="WARNING",
    )


class OperatorKeyGate:
    """Pure ASGI: an operator API key (Bearer ppo_...) before the MCP transport sees the request; none,
    or an unknown, revoked or locked operator's, is 401 with the operator API's error body."""

    def __init__(self, app: ASGIApp, platform: Platform) -> None:
        self.app = app
        self.platform = platform

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        principal = None
        if scheme.lower() == "bearer" and token.strip():
            principal = await by_key(self.platform.db, token.strip())
        if principal is None:
            body = json.dumps(
                {"detail": Unauthorized("an operator API key is required: send Bearer ppo_...").body()}
            ).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        scope = dict(scope, state={**scope.get("state", {}), PRINCIPAL: principal})
        await self.app(scope, receive, send)


class BarePath:
    """Pure ASGI: `<path>` -> `<path>/` before routing, so the mount answers without a redirect."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path:
            scope = dict(scope, path=self.path + "/", raw_path=(self.path + "/").encode())
        await self.app(scope, receive, send)


def operator_mcp_app(platform: Platform, registry: dict[str, Operation]) -> tuple[MCPServer[Any], ASGIApp]:
    """The server (its session manager must run in the app's lifespan) and the gated ASGI app to mount."""
    server = build_server(platform, registry)
    # Bearer keys are the only credential (no cookies): DNS rebinding gains nothing, as for /api/v1/mcp
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    transport = server.streamable_http_app(
        streamable_http_path="/", stateless_http=True, transport_security=security
    )
    return server, OperatorKeyGate(transport, platform)
