"""The short way through an operation route (issue 15: the HTTP layer's CPU per request).

FastAPI's request handler does, per request, the same generic work for every route: a Request object,
two AsyncExitStacks, the body read through it, dependency solving (the bearer dependency, every
parameter), the input model validated as a field, then the endpoint. For the common shapes of a
registry route this module does the same thing directly, as a pure ASGI app in front of FastAPI's:

- no path parameter, and either a JSON body that IS the operation's input model, or a GET/DELETE with no
  query string (the input model's defaults, or no input at all);
- or path parameters that are the whole input (no query or body field), no query string: the input model
  validated from the path's strings, as FastAPI's path parameters then the endpoint's model_validate;
- the body is parsed with `json.loads` and validated with the model in Python mode, exactly what FastAPI
  does with it (`ModelField.validate`).

Anything else goes to FastAPI's handler unchanged: a path parameter beside query or body fields, a query
string, a missing or non-JSON content type, an empty body, a path value or body that does not parse or
validate (FastAPI then produces the exact 422, or 405: the body read here is replayed to it). Nothing
has run before the fallback (no key check, no invoke), so no answer can differ but by the work saved.
Errors raised by the key check or the operation reach the app's exception handlers as from the endpoint
(the same handlers, the same bodies)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from pydantic import BaseModel, ValidationError

from proxyplane.adapters.rest.errors import validation_response
from proxyplane.core.text_input import JsonRefused, check_json
from proxyplane.ops import Operation

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Respond = Callable[[Scope, Any], Awaitable[Any]]

_JSON_TYPES = (b"application/json",)


def _content_type_is_json(value: bytes) -> bool:
    """`application/json` (parameters allowed) or `application/<x>+json`: what FastAPI parses as JSON."""
    main = value.split(b";", 1)[0].strip().lower()
    return main in _JSON_TYPES or (main.startswith(b"application/") and main.endswith(b"+json"))


class FastOperation:
    """Pure ASGI: the operation route's own app; `fallback` is FastAPI's handler of the same route.
    `run(scope, data)` checks the key, invokes the operation and returns the response (routes.py)."""

    def __init__(
        self,
        op: Operation,
        fallback: ASGIApp,
        run: Respond,
        *,
        path_names: list[str],
        rest: bool,
        body_model: Any,
    ):
        self.op = op
        self.fallback = fallback
        self.run = run
        self.as_query = op.method in ("GET", "DELETE")
        # the body's model when it is the input model itself (else FastAPI's handler: a sub-model)
        self.body_model: type[BaseModel] | None = body_model if body_model is op.input else None
        # every input field is a path parameter: the input is validated from them, as the endpoint does
        self.path_names = path_names if not rest else []
        path_only = bool(path_names) and not rest
        usable = self.as_query or self.body_model is not None or op.input is None
        self.usable = path_only or (not path_names and usable)
        self.enabled = self.usable  # (bench/http_cpu.py --ab turns it off to compare)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.as_query and self.op.input is not None:
            await self._with_body(scope, receive, send)  # every JSON body is checked there (check_json)
        elif not self.enabled:
            await self.fallback(scope, receive, send)
        else:
            await self._without_body(scope, receive, send)

    async def _without_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("query_string"):
            await self.fallback(scope, receive, send)
            return
        data: BaseModel | None = None
        if self.op.input is not None:
            path = scope.get("path_params", {})
            try:
                data = self.op.input.model_validate({n: path[n] for n in self.path_names})
            except ValidationError:
                await self.fallback(scope, receive, send)
                return
        response = await self.run(scope, data)
        await response(scope, receive, send)

    async def _with_body(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A body route: a JSON body too deep or with a number too long is refused here with 422 before
        any parser sees it (core/text_input.check_json), on the short way or FastAPI's alike."""
        content_type: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"content-type":
                content_type = value
                break
        if content_type is not None and not _content_type_is_json(content_type):
            await self.fallback(scope, receive, send)  # FastAPI parses JSON only (or with no type)
            return
        body, messages = await _read_body(receive)
        try:
            check_json(body)
        except JsonRefused as exc:
            error = {"loc": ["body"], "msg": str(exc), "type": exc.kind}
            await validation_response([error])(scope, _replay(messages, receive), send)
            return
        data: BaseModel | None = None
        if body and self.enabled and self.body_model is not None and content_type is not None:
            try:
                data = self.body_model.model_validate(json.loads(body))
            except (ValueError, ValidationError):  # JSONDecodeError, UnicodeDecodeError: FastAPI's answer
                data = None
        if data is None:
            await self.fallback(scope, _replay(messages, receive), send)
            return
        response = await self.run(scope, data)
        await response(scope, receive, send)


async def _read_body(receive: Receive) -> tuple[bytes, list[Message]]:
    """The whole request body, and the messages it came in (to replay them to FastAPI's handler)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":  # a disconnect: FastAPI's handler sees it too
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
