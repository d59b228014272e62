"""Byte-exact bodies of the legacy API: JSON the way the original (Laravel/PHP `json_encode`) writes
it -- compact, `/` escaped as `\\/`, non-ASCII as `\\uXXXX`; the values (money, dates, error texts) come
from domains/legacy/wire.py."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from proxyplane.domains.legacy.wire import UNPROCESSABLE, Money

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=UTF-8"


def encode(value: Any) -> str:
    if isinstance(value, Money):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(encode(v) for v in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool | int):
        return json.dumps(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=True).replace("/", "\\/")


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(encode(value).encode(), status_code=status, media_type=JSON_TYPE, headers=headers)


def text_response(text: str, status: int = 200, media_type: str = TEXT_TYPE) -> Response:
    return Response(text.encode(), status_code=status, media_type=media_type)


def error(message: str, status: int = 422, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": message}, status, headers)


class LegacyError(Exception):
    """Raised inside a handler: the route answers with exactly this response."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.body)
        self.response = response


def fail(
    message: str = UNPROCESSABLE, status: int = 422, headers: dict[str, str] | None = None
) -> LegacyError:
    return LegacyError(error(message, status, headers))
