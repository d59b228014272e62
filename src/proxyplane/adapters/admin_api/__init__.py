"""The operator REST API at /api/admin/v1 (issue 33), generated from the registry like adapters/rest: one
route per operation served by the "admin_api" door (a read is GET with its input as query parameters, a
write is POST with its input as the JSON body), its own OpenAPI 3.1 document at
/api/admin/v1/openapi.json. Auth: `Authorization: Bearer ppo_...`, an operator API key bound to a role;
`invoke` refuses (403, naming the missing permission) an operation the key's role may not run.
An `Idempotency-Key` header makes a write act once (the audit row's unique key). The same operations are
MCP tools at /api/admin/v1/mcp (mcp.py)."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from proxyplane.core.errors import DomainError, Unauthorized
from proxyplane.domains.operators.auth import by_key
from proxyplane.operations import REGISTRY
from proxyplane.operator_calls import check_role
from proxyplane.ops import Caller, Effect, Operation, invoke, served
from proxyplane.platform import Platform

PREFIX = "/api/admin/v1"
MCP_PATH = PREFIX + "/mcp"  # the same operations as MCP tools (mcp.py)
DOOR = "admin_api"
bearer = HTTPBearer(auto_error=False, description="an operator API key (ppo_...), bound to a role")


def _error(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": body}, status_code=status, headers=headers)


async def caller_of(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Caller:
    platform: Platform = request.app.state.platform
    principal = await by_key(platform.db, credentials.credentials) if credentials else None
    if principal is None:
        raise Unauthorized("an operator API key is required: send Authorization: Bearer ppo_...")
    return Caller(
        customer_id=None,
        client_ip=request.client.host if request.client else "",
        channel=DOOR,
        user_agent=request.headers.get("user-agent", "")[:300],
        operator_id=principal.operator_id,
        role=principal.role,
        actor=principal.email,
    )


def add_operation(api: FastAPI, op: Operation) -> None:
    assert op.input is not None, op.name
    marker = Query() if op.method == "GET" else Body()

    async def gate(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Caller:
        """Who calls, and whether their role may: before the input is validated (403 before 422)."""
        caller = await caller_of(request, credentials)
        await check_role(request.app.state.platform, op, caller)  # a refusal is audited
        return caller

    params = [
        inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request),
        inspect.Parameter("caller", inspect.Parameter.KEYWORD_ONLY, annotation=Caller, default=Depends(gate)),
        inspect.Parameter("payload", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[op.input, marker]),
    ]

    async def endpoint(**kwargs: Any) -> Any:
        request: Request = kwargs["request"]
        caller: Caller = kwargs["caller"]
        key = request.headers.get("idempotency-key", "")[:150]
        door_key = f"api:{caller.operator_id}:{op.name}:{key}" if key and op.effect != Effect.READ else None
        return await invoke(request.app.state.platform, op, caller, kwargs["payload"], door_key=door_key)

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    api.add_api_route(
        op.path,
        endpoint,
        methods=[op.method],
        name=op.name,
        operation_id=op.name,
        summary=op.summary,
        description=f"Permission: `{op.permission}`. Effect: {op.effect}.",
        tags=[op.permission.split(".")[0]],
    )


def build(platform: Platform) -> FastAPI:
    api = FastAPI(
        title="ProxyPlane operator API",
        version="1",
        description=(
            "The operator's side over the same registry as the CLI and the console. Every call needs an "
            "operator API key (Bearer) bound to a role; a role without the operation's permission gets 403 "
            "naming it. Every write is recorded in the audit log."
        ),
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
    )
    api.state.platform = platform
    for op in served(DOOR, REGISTRY).values():
        add_operation(api, op)

    @api.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return _error(exc.http_status, exc.body(), headers)

    @api.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query"))
        message = f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        return _error(422, {"error": "validation_error", "message": message})

    return api


def install_admin_api(app: FastAPI, platform: Platform) -> Any:
    """Mount the operator API and its MCP endpoint (mcp.py); returns the MCP server, whose session
    manager the app's lifespan runs."""
    from proxyplane.adapters.admin_api.mcp import BarePath, operator_mcp_app

    server, gated = operator_mcp_app(platform, REGISTRY)
    app.mount(MCP_PATH, gated, name="admin-mcp")  # before the API's mount, which would take its path
    app.mount(PREFIX, build(platform), name="admin-api")
    app.add_middleware(BarePath, path=MCP_PATH)
    return server
