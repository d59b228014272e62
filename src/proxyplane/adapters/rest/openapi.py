"""The error side of the OpenAPI description, derived from each Operation's declaration (issue 19).

One shared error model (`ErrorResponse`: `{"detail": {"error", "message", ...}}`, the body every error of
/api/v1 has, see adapters/rest/errors.py) and, per operation, every status it can answer:

- 401 when a key is required or optional (a sent key that is invalid is refused even where optional);
- 403 when a key is required (missing_scope, forbidden, kyc_required, spend_limit_exceeded);
- 404 when the path names a resource (`{service_id}` ...);
- 422 when the operation takes any input (body, query or path), with the real body, not FastAPI's default;
- 402 and 409 for operations that spend money (insufficient_balance; price_changed, conflict), 409 for an
  `idempotency_key` (idempotency_key_reused);
- whatever the declaration adds in `extra["errors"]`: DomainError classes (e.g. `Conflict` for an action
  that needs an active service).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.ops import Auth, Effect, Operation


class FieldError(BaseModel):
    """One refused field of a `validation_error` (pydantic's location, message and error type)."""

    loc: list[str | int] = Field(description='where: ["body", "name"], ["query", "limit"], ["path", "id"]')
    msg: str
    type: str


class StockError(BaseModel):
    """One refused country of an order or quote (`insufficient_stock`, `unknown_country`)."""

    model_config = ConfigDict(extra="allow")
    country: str | None
    requested: int
    available: int
    message: str


class ErrorDetail(BaseModel):
    """The error: a stable machine code, a human message and, depending on the code, extra fields."""

    model_config = ConfigDict(extra="allow")
    error: str = Field(description="machine-readable code, e.g. not_found, missing_scope, price_changed")
    message: str = Field(description="human-readable explanation")
    errors: list[FieldError | StockError] | None = Field(
        default=None, description="validation_error: the refused fields; insufficient_stock: the countries"
    )
    field: str | None = Field(default=None, description="validation_error raised by the service: the field")
    missing_scopes: list[str] | None = Field(default=None, description="missing_scope (403): scopes lacking")
    current_price_cents: int | None = Field(
        default=None, description="price_changed (409): what the call would charge now"
    )
    max_total_cents: int | None = Field(default=None, description="price_changed (409): the guard sent")
    required_cents: int | None = Field(default=None, description="insufficient_balance (402)")
    balance_cents: int | None = Field(default=None, description="insufficient_balance (402)")
    missing_cents: int | None = Field(default=None, description="insufficient_balance (402): the shortfall")


class ErrorResponse(BaseModel):
    """Every error answer of /api/v1."""

    detail: ErrorDetail


DESCRIPTIONS: dict[int, str] = {
    401: "`unauthorized`: no API key, or an invalid or revoked one (with `WWW-Authenticate: Bearer`)",
    402: "`insufficient_balance`: the wallet cannot pay (`required_cents`, `balance_cents`)",
    403: "`missing_scope` (the key lacks `missing_scopes`), `forbidden`, `kyc_required` (the payment method "
    "needs identity verification) or `spend_limit_exceeded` (the key's spending cap)",
    404: "`not_found`: no such resource for this customer (another customer's is not found either)",
    409: "`conflict` (the resource's state refuses the action), `price_changed` (`current_price_cents` "
    "above `max_total_cents`) or `idempotency_key_reused`",
    422: "`validation_error` (`errors` lists the refused fields) or a domain refusal of the input "
    "(e.g. `insufficient_stock`, `order_below_minimum`)",
}


def error_statuses(op: Operation) -> list[int]:
    """Every error status `op` can answer, from its declaration (see the module docstring)."""
    found: set[int] = set()
    if op.auth != Auth.NONE:
        found.add(401)
    if op.auth == Auth.KEY:
        found.add(403)
    if re.search(r"{\w+}", op.path):
        found.add(404)
    if op.input is not None:
        found.add(422)
    if op.effect == Effect.SPENDS_MONEY:
        found.update((402, 409))
    if op.takes_idempotency_key:
        found.add(409)
    for err in op.extra.get("errors", ()):
        found.add(err.http_status)
    return sorted(found)


def error_responses(op: Operation) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of FastAPI's add_api_route for `op`'s errors (422 replaces FastAPI's default)."""
    return {
        status: {"model": ErrorResponse, "description": DESCRIPTIONS.get(status, "error")}
        for status in error_statuses(op)
    }


def optional_security(op: Operation) -> dict[str, Any] | None:
    """A key-optional operation lists the empty requirement too (FastAPI's list gets `{}` appended), so a
    client (and a fuzzer) knows that a call without `Authorization` is valid."""
    return {"security": [{}]} if op.auth == Auth.OPTIONAL else None


# --- links between operations (issue 19.4: schemathesis's stateful phase follows them) ---------------


def _id_pointers(model: Any, prefix: str = "", depth: int = 0) -> dict[str, str]:
    """field name -> JSON pointer into a response of `model`: its own fields, the fields of a nested
    object and of the first item of a list (RootModel lists too), two levels deep; the shallowest wins."""
    found: dict[str, str] = {}
    if not (isinstance(model, type) and issubclass(model, BaseModel)) or depth > 2:
        return found
    nested: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        pointer = prefix if name == "root" else f"{prefix}/{name}"
        if name != "root":
            found.setdefault(name, pointer)
        for arg in _model_args(info.annotation):
            nested.append((pointer + ("/0" if arg[1] else ""), arg[0]))
    for pointer, sub in nested:
        for name, deep in _id_pointers(sub, pointer, depth + 1).items():
            found.setdefault(name, deep)
    return found


def _model_args(annotation: Any) -> list[tuple[type[BaseModel], bool]]:
    """The models inside an annotation: (model, inside a list) for `M`, `M | None`, `list[M]`."""
    from typing import get_args, get_origin

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, False)]
    is_list = get_origin(annotation) in (list, tuple)
    out: list[tuple[type[BaseModel], bool]] = []
    for arg in get_args(annotation):
        out.extend((m, is_list or inner) for m, inner in _model_args(arg))
    return out


def path_names(path: str) -> list[str]:
    return re.findall(r"{(\w+)}", path)


# pairs the names match but a fuzzer must not follow: the caller's own key (whoami, and the list, whose
# items include it) revoked would end every later call of the run with 401
NOT_LINKED = {
    ("whoami", "revoke_api_key"),
    ("list_api_keys", "revoke_api_key"),
    # the first member listed (and an activity row's actor) is the holder, whose member_id is null
    ("list_members", "change_member_role"),
    ("list_members", "remove_member"),
    ("get_account_activity", "change_member_role"),
    ("get_account_activity", "remove_member"),
    # handing the account over closes its own sign-in: never followed by a fuzzer
    ("list_members", "hand_over_account"),
    ("get_account_activity", "hand_over_account"),
    # revoke_invitation answers the member list too (its first row: the holder, member_id null)
    ("revoke_invitation", "change_member_role"),
    ("revoke_invitation", "remove_member"),
    ("revoke_invitation", "hand_over_account"),
}


def success_links(op: Operation, targets: dict[str, Operation]) -> dict[str, Any]:
    """OpenAPI `links` of `op`'s success response, by name: to every operation whose path parameters are
    all filled, at least one by a field of this response that is not one of `op`'s own path parameters
    (a new identifier: create_service -> service.service_id -> every /services/{service_id} operation), the
    rest by `op`'s request path parameters of the same name."""
    if op.output is None:
        return {}
    pointers = _id_pointers(op.output)
    own = set(path_names(op.path))
    links: dict[str, Any] = {}
    for target in targets.values():
        wanted = path_names(target.path)
        if (
            target is op
            or (op.name, target.name) in NOT_LINKED
            or not any(n in pointers and n not in own for n in wanted)
        ):
            continue
        if not all(n in pointers or n in own for n in wanted):
            continue
        parameters = {
            f"path.{n}": f"$request.path.{n}" if n in own else f"$response.body#{pointers[n]}" for n in wanted
        }
        links[target.name] = {"operationId": target.name, "parameters": parameters}
    return links


def link_responses(op: Operation, targets: dict[str, Operation]) -> dict[int | str, dict[str, Any]]:
    """The `responses=` entry that adds `op`'s links to its success response (none when it has none)."""
    links = success_links(op, targets)
    return {op.status_code: {"links": links}} if links else {}
