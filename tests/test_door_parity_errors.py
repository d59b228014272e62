"""Cross-door error parity (issue 20.3): every registered operation that more than one door serves gets
the same bad input, the same key without its scopes and the same unknown id through each of them, and each
door answers with the same error code (REST: status + body `error`; MCP: the tool error's code). Generated
from the registry: an operation is tried in a case when a sample input can be built from its input model
(scalars, ids, enums, literals, lists, nested models); the test fails if no operation is covered (today:
55 of the 89 REST+MCP operations in the bad input case, 75 in the missing scope case, 53 in the unknown id
case). The other doors serve operations of their own only (legacy, web, cli; the legacy get_balance takes
no scopes, ids or input), so REST and MCP are the doors an operation shares; the operator (cli) operations
are checked to be served by no other door in test_door_parity.py."""

from __future__ import annotations

import enum
import re
import types
import typing
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from proxyplane.adapters.mcp.tools import needs_max_total
from proxyplane.adapters.rest.app import API_PREFIX
from proxyplane.domains.apikeys.service import create_key
from proxyplane.ops import Auth, Effect, Operation, served
from proxyplane.platform import Platform
from tests.adapters.mcp.conftest import app, mcp_client, rest  # noqa: F401  (fixtures)
from tests.adapters.mcp.test_tools import text
from tests.support import Account

pytestmark = pytest.mark.anyio

NO_SAMPLE = object()


def sample(annotation: Any) -> Any:
    """A JSON value valid for `annotation`, or NO_SAMPLE."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return sample(args[0])
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return sample(options[0]) if options else None
    if origin is typing.Literal:
        return args[0]
    if origin is list:
        return []
    if origin is dict or annotation is dict:
        return {}
    if annotation is uuid.UUID:
        return str(uuid.uuid4())
    if annotation is bool:
        return False
    if annotation is int:
        return 1
    if annotation is str:
        return "x"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return next(iter(annotation)).value
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sample_input(annotation)
    return NO_SAMPLE


def sample_input(model: type[BaseModel]) -> Any:
    values = {}
    for name, info in model.model_fields.items():
        if info.is_required():
            values[name] = sample(info.annotation)
            if values[name] is NO_SAMPLE:
                return NO_SAMPLE
    try:
        model.model_validate(values)
    except ValidationError:
        return NO_SAMPLE
    return values


def id_fields(op: Operation) -> list[str]:
    if op.input is None:
        return []
    return [n for n, f in op.input.model_fields.items() if f.is_required() and f.annotation is uuid.UUID]


def inputs(op: Operation) -> dict[str, Any] | None:
    if op.input is None:
        return {}
    found = sample_input(op.input)
    if found is NO_SAMPLE:
        return None
    if op.effect == Effect.SPENDS_MONEY and op.takes_idempotency_key:  # required by MCP for spending
        found["idempotency_key"] = uuid.uuid4().hex
    return found


def multi_door() -> list[Operation]:
    return [op for op in served("rest").values() if op.serves("mcp")]


async def rest_code(
    client: httpx.AsyncClient, op: Operation, key: str, values: dict[str, Any]
) -> tuple[int, str]:
    path_names = re.findall(r"{(\w+)}", op.path)
    path = op.path
    for name in path_names:
        path = path.replace("{" + name + "}", str(values[name]))
    rest_values = {k: v for k, v in values.items() if k not in path_names}
    kwargs: dict[str, Any] = (
        {"params": rest_values} if op.method in ("GET", "DELETE") else {"json": rest_values}
    )
    response = await client.request(
        op.method, API_PREFIX + path, headers={"Authorization": f"Bearer {key}"}, **kwargs
    )
    if response.status_code < 400:
        return response.status_code, "ok"
    return response.status_code, str(response.json()["detail"]["error"])


async def mcp_code(mcp: Any, op: Operation, values: dict[str, Any]) -> str:
    if needs_max_total(op):  # the MCP door's own required price guard (adapters/mcp/tools.py)
        values = {**values, "max_total_cents": 0}
    result = await mcp.call_tool(op.name, values)
    if not getattr(result, "is_error", False):
        return "ok"
    return text(result).split(":", 1)[0]


async def no_scope_key(platform: Platform, account: Account) -> str:
    async with platform.db.unit_of_work() as uow:
        _, raw = await create_key(uow.session, account.customer_id, "no scopes", frozenset())
        await uow.commit()
    return raw


def bad_input(op: Operation) -> dict[str, Any] | None:
    """A sample input with its first id (or whole-number) field made unreadable."""
    values = inputs(op)
    if values is None or op.input is None:
        return None
    for name, info in op.input.model_fields.items():
        if info.annotation in (uuid.UUID, int) and name in values:
            return {**values, name: "not-valid"}
    return None


CASES = ["bad_input", "missing_scope", "unknown_id"]
STATUS = {"validation_error": 422, "missing_scope": 403, "not_found": 404, "ok": 200}


@pytest.mark.parametrize("case", CASES)
async def test_each_door_answers_the_same_error(
    case: str,
    app: FastAPI,  # noqa: F811
    rest: httpx.AsyncClient,  # noqa: F811
    platform: Platform,
    account: Account,
) -> None:
    key = await no_scope_key(platform, account) if case == "missing_scope" else await account.key()
    tried, differ = [], []
    async with mcp_client(app, key) as mcp:
        for op in multi_door():
            if case == "bad_input":
                values = bad_input(op)
            elif case == "missing_scope":
                values = inputs(op) if op.auth == Auth.KEY and op.scopes else None
            else:
                values = inputs(op) if id_fields(op) else None
            if values is None:
                continue
            status, code = await rest_code(rest, op, key, values)
            tool_code = await mcp_code(mcp, op, values)
            tried.append(op.name)
            if code != tool_code or code == "ok" or status != STATUS[code]:
                differ.append((op.name, status, code, tool_code))
    assert tried, case
    assert differ == [], (case, differ)
