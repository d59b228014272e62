"""Byte-exact bodies of the legacy API: JSON the way the original (Laravel/PHP `json_encode`) writes
it -- compact, `/` escaped as `\\/`, non-ASCII as `\\uXXXX` -- money as USD numbers with two decimals,
dates `YYYY-MM-DD`, and the fixed error texts of the document's Errors table."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from starlette.responses import Response

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=UTF-8"

# the document's Errors table, word for word
INVALID_FORMAT = "Invalid credentials format"
UNAUTHENTICATED = "Unauthenticated"
UNPROCESSABLE = "Unprocessable Entity"
PRODUCT_NOT_FOUND = "Unprocessable Entity or product ID not found"
CLIENT_NOT_FOUND = "Unprocessable Entity. ClientID not found"
INVALID_IPV4 = "Unprocessable Entity. Invalid IPv4 format"
# not in the document (its 422 for a product is the bare text): says what a composite order misses
SETIP_REQUIRED = (
    "Unprocessable Entity. setip is required: the IPv4 address to bind (whitelist) for this product"
)
TOO_MANY = "Too Many Attempts (updateList). Next update possible: {next}"


class Money:
    """USD amount from integer cents, written as a JSON number with two decimals (12.50, -0.30)."""

    __slots__ = ("cents",)

    def __init__(self, cents: int) -> None:
        self.cents = int(cents)

    def __str__(self) -> str:
        sign = "-" if self.cents < 0 else ""
        whole, frac = divmod(abs(self.cents), 100)
        return f"{sign}{whole}.{frac:02d}"


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


def date(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%d") if moment is not None else None


def timestamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else None


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
