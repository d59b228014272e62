"""The REST error mapper: one body shape, {"detail": {"error": <code>, "message": <text>, ...}}.

A method a path does not serve answers 405 with `Allow` listing every method of that path (several
routes share a path); a request whose only fault is a path segment that names another resource
(`DELETE .../addons/available` against `.../addons/{addon_id}`) answers 405 too, not 422. A body that
cannot even be decoded is 422 `validation_error` like any invalid JSON (FastAPI's own 400 is not used), and
so is a text with a NUL character that PostgreSQL refuses to store (the unit of work has rolled back)."""

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException

from proxyplane.core.errors import DomainError, Unauthorized

CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def error_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": body}, status_code=status, headers=headers)


NUL_REFUSED = 'invalid byte sequence for encoding "UTF8": 0x00'  # PostgreSQL on a "\x00" in a text
BODY_UNREADABLE = "There was an error parsing the body"  # FastAPI's 400 for a body it cannot decode


METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def path_methods(request: Request) -> set[str]:
    """The methods documented for this request's path by the paths that do not serve its method and name
    more of it literally than those that do (`.../webhooks/events` under PATCH: GET, the methods of
    `.../webhooks/events`, not of `.../webhooks/{endpoint_id}`)."""
    served_by: list[tuple[int, set[str]]] = []
    paths: dict[str, Any] = request.app.openapi().get("paths", {})
    for template, item in paths.items():
        parts = re.split(r"{[^/}]+}", template)
        if re.fullmatch("[^/]+".join(re.escape(p) for p in parts), request.url.path):
            served_by.append((len(parts) - 1, {m.upper() for m in item if m in METHODS}))
    own = [params for params, methods in served_by if request.method in methods]
    others = [(params, methods) for params, methods in served_by if request.method not in methods]
    if own:  # the path serves the method through a parameter: only more literal paths shadow it
        return {m for params, methods in others if params < min(own) for m in methods}
    fewest = min((params for params, _ in others), default=0)  # the most literal path is the resource
    return {m for params, methods in others if params == fewest for m in methods}


def not_allowed(methods: set[str]) -> JSONResponse:
    allow = ", ".join(sorted(methods))
    return error_response(
        405, {"error": "method_not_allowed", "message": f"allowed: {allow}"}, {"Allow": allow}
    )


def validation_response(errors: list[dict[str, Any]]) -> JSONResponse:
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(p) for p in first["loc"] if p not in ("body", "query", "path"))
    message = f"{where}: {first['msg']}" if where else str(first["msg"])
    return error_response(422, {"error": "validation_error", "message": message, "errors": errors})


def install(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return error_response(exc.http_status, exc.body(), headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()
        ]
        if any(e["loc"][:1] == ["path"] for e in errors):
            shadowed = path_methods(request)
            if shadowed:
                return not_allowed(shadowed)
        return validation_response(errors)

    @app.exception_handler(DBAPIError)
    async def _database(_: Request, exc: DBAPIError) -> JSONResponse:
        if NUL_REFUSED not in str(exc.orig):
            raise exc  # a real server error: 500
        error = {
            "loc": ["body"],
            "msg": "text must not contain NUL (\\u0000) characters",
            "type": "string_nul",
        }
        return validation_response([error])

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else "error"
        if exc.status_code == 400 and detail == BODY_UNREADABLE:
            return validation_response(
                [{"loc": ["body"], "msg": "body is not UTF-8 JSON", "type": "json_invalid"}]
            )
        if exc.status_code == 405:
            allow = (getattr(exc, "headers", None) or {}).get("Allow", "")
            return not_allowed(path_methods(request) or {m.strip() for m in allow.split(",") if m.strip()})
        code = CODES.get(exc.status_code, "error")
        return error_response(
            exc.status_code, {"error": code, "message": detail}, getattr(exc, "headers", None)
        )
