"""The legacy account API's values and refusals, as its operations produce them (the adapter writes the
bytes: adapters/legacy/render.py): money as USD with two decimals, dates `YYYY-MM-DD`, and the fixed error
texts of the document's Errors table, raised as `Refused`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from proxyplane.ops import LEGACY, Effect, Operation

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


def date(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%d") if moment is not None else None


def timestamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else None


class Refused(Exception):
    """Raised inside a legacy operation: the route answers `{"error": message}` with this status and
    headers (the transaction then rolls back)."""

    def __init__(self, message: str, status: int = 422, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message, self.status, self.headers = message, status, headers


def fail(message: str = UNPROCESSABLE, status: int = 422, headers: dict[str, str] | None = None) -> Refused:
    return Refused(message, status, headers)


def legacy_get(
    name: str, handler: Any, input_model: type[BaseModel], scopes: set[str], effect: Effect = Effect.READ
) -> Operation:
    """A legacy `GET /api/<name>` operation `legacy_<name>` (the legacy door only, no MCP tool)."""
    return Operation(
        name=f"legacy_{name}",
        doors=LEGACY,
        summary=f"legacy API: {name}",
        method="GET",
        path=f"/api/{name}",
        handler=handler,
        input=input_model,
        scopes=frozenset(scopes),
        effect=effect,
        mcp=False,
    )
