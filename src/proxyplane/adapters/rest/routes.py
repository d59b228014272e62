"""REST routes generated from the operation registry: one short endpoint per operation.

Path parameters come from `{name}` in the operation's path; the rest of the input model is the query
string for GET/DELETE and the JSON body otherwise (unknown body fields are refused with 422)."""

from __future__ import annotations

import base64
import inspect
import re
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, serialize_response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from proxyplane.adapters.rest.fast import FastOperation
from proxyplane.adapters.rest.openapi import error_responses, link_responses, optional_security
from proxyplane.core.errors import Unauthorized
from proxyplane.domains.apikeys.service import authenticate
from proxyplane.domains.oauth.service import refused_bearer
from proxyplane.ops import Auth, Caller, Operation, dumped_json, invoke, served
from proxyplane.platform import Platform

JSON = "application/json"
bearer = HTTPBearer(auto_error=False, description="API key: Authorization: Bearer <API_KEY>")


def client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def caller_for(platform: Platform, op: Operation, request: Request, channel: str = "rest") -> Caller:
    """Build the Caller: REST and MCP share authenticate(); an invalid key is 401 even where optional."""
    headers = request.headers
    return await caller_of(
        platform,
        op,
        client_ip(request),
        headers.get("authorization", ""),
        headers.get("user-agent", ""),
        channel,
    )


async def caller_of(
    platform: Platform, op: Operation, ip: str, header: str, user_agent: str, channel: str = "rest"
) -> Caller:
    """`caller_for` from the request's client address and its Authorization and User-Agent values."""
    if op.auth == Auth.NONE or (op.auth == Auth.OPTIONAL and not header):
        return Caller.anonymous(ip, channel)
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("an API key is required: send Authorization: Bearer <API_KEY>")
    principal = await authenticate(platform.db, token.strip(), ip)
    if principal is None:
        raise Unauthorized(refused_bearer(token.strip(), oauth_accepted=False))
    return Caller(
        customer_id=principal.customer_id,
        key_id=principal.key_id,
        scopes=principal.scopes,
        member_id=principal.member_id,
        client_ip=ip,
        channel=channel,
        user_agent=user_agent,
    )


async def _scope_caller(platform: Platform, op: Operation, scope: Any) -> Caller:
    """`caller_for` straight from the ASGI scope (fast.py): the same values a Request would give."""
    header = agent = ""
    for name, value in scope["headers"]:  # Starlette's Headers.get: the first of a repeated header
        if name == b"authorization" and not header:
            header = value.decode("latin-1")
        elif name == b"user-agent" and not agent:
            agent = value.decode("latin-1")
    client = scope.get("client")
    return await caller_of(platform, op, client[0] if client else "", header, agent)


def _sub_model(op: Operation, names: list[str], suffix: str, forbid: bool) -> type[BaseModel]:
    assert op.input is not None
    fields: dict[str, Any] = {
        n: (op.input.model_fields[n].annotation, op.input.model_fields[n]) for n in names
    }
    config = ConfigDict(extra="forbid") if forbid else ConfigDict()
    model_name = "".join(p.capitalize() for p in op.name.split("_")) + suffix
    return create_model(model_name, __config__=config, __doc__=op.input.__doc__, **fields)


def add_operation(router: APIRouter, op: Operation) -> None:
    """The route of `op`. Its endpoint takes the platform from the app (`app.state.platform`), so the route
    depends on nothing but the operation and one built route serves every app of the process."""
    path_names = re.findall(r"{(\w+)}", op.path)
    fields = list(op.input.model_fields) if op.input else []
    rest = [n for n in fields if n not in path_names]
    params = [inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)]
    if op.auth != Auth.NONE:
        params.append(
            inspect.Parameter(
                "_credentials",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=HTTPAuthorizationCredentials | None,
                default=Depends(bearer),
            )
        )
    assert op.input is not None or not fields
    for name in path_names:
        info = op.input.model_fields[name] if op.input else None
        ann: Any = info.annotation if info else str
        if info and info.metadata:  # the field's constraints (pattern, lengths) reach the path parameter
            ann = Annotated[ann, *info.metadata]
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[ann, Path()])
        )
    as_query = op.method in ("GET", "DELETE")
    body_model: Any = None
    if rest:
        if path_names or op.input is None:
            model = _sub_model(op, rest, "Query" if as_query else "Body", forbid=not as_query)
        else:
            model = op.input
        body_model = None if as_query else model
        marker = Query() if as_query else Body()
        params.append(
            inspect.Parameter("payload", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[model, marker])
        )

    async def endpoint(**kwargs: Any) -> Any:
        request: Request = kwargs["request"]
        platform: Platform = request.app.state.platform
        caller = await caller_for(platform, op, request)
        data = None
        payload = kwargs.get("payload")
        if not path_names and isinstance(payload, op.input or ()):
            data = payload  # the body or query IS the input model, validated once by FastAPI
        elif op.input is not None:
            values = {n: kwargs[n] for n in path_names}
            if payload is not None:
                values.update(payload.model_dump(exclude_unset=True))  # a PATCH keeps what it omits
            try:
                data = op.input.model_validate(values)
            except ValidationError as exc:
                raise RequestValidationError(exc.errors(include_url=False)) from None
        return _response(op, await invoke(platform, op, caller, data))

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    extra: dict[str, Any] = {} if op.output else {"response_class": Response}
    if "binary" in op.extra:
        extra = {"response_class": Response, "response_model": None}
    router.add_api_route(
        op.path,
        endpoint,
        methods=[op.method],
        name=op.name,
        operation_id=op.name,
        summary=op.summary,
        description=_description(op),
        status_code=op.status_code,
        tags=list(op.tags),
        responses={**error_responses(op), **link_responses(op, served("rest"))},
        openapi_extra=optional_security(op),
        **{"response_model": op.output, **extra},
    )
    route = router.routes[-1]
    assert isinstance(route, APIRoute) and route.endpoint is endpoint

    async def run(scope: Any, data: BaseModel | None) -> Response:
        platform: Platform = scope["app"].state.platform
        caller = await _scope_caller(platform, op, scope)
        result = _response(op, await invoke(platform, op, caller, data))
        if isinstance(result, Response):
            return result
        content = await serialize_response(
            field=route.response_field, response_content=result, dump_json=True
        )
        return Response(content, status_code=op.status_code, media_type=JSON)  # as FastAPI's handler does

    route.app = FastOperation(
        op, route.app, run, path_names=path_names, rest=bool(rest), body_model=body_model
    )


def _response(op: Operation, result: Any) -> Any:
    """The endpoint's answer: no content, raw bytes, the output model serialized once; anything else
    is left to FastAPI's response model (serialize_response)."""
    if op.output is None:
        return Response(status_code=op.status_code)
    if "binary" in op.extra:  # (base64 field, media type field, filename field): serve raw bytes
        data_field, type_field, name_field = op.extra["binary"]
        return Response(
            base64.b64decode(getattr(result, data_field)),
            media_type=getattr(result, type_field),
            headers={"Content-Disposition": f'inline; filename="{getattr(result, name_field)}"'},
        )
    if type(result) is op.output:
        # serialized once, here: FastAPI would validate the instance again before the same dump; a keyed
        # call's text stored with its idempotency record when it is the same (ops.dumped_json)
        content = dumped_json(result) or result.model_dump_json(by_alias=True)
        return Response(content, status_code=op.status_code, media_type=JSON)
    return result


def _description(op: Operation) -> str:
    scopes = ", ".join(sorted(op.scopes)) or "none"
    auth = {Auth.KEY: "API key required", Auth.OPTIONAL: "API key optional", Auth.NONE: "no key"}[op.auth]
    return f"{op.summary}\n\n{auth}; scopes: {scopes}; effect: {op.effect.value}."
