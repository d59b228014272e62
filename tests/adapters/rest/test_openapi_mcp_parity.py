"""Issue 19.3: the MCP tool input schemas, generated from the same input models as the REST description,
carry the same constraints (bounds, lengths, patterns, enums) for every argument of every operation."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from proxyplane.adapters.mcp.tools import build_tool
from proxyplane.operations import REGISTRY
from proxyplane.platform import Platform

pytestmark = pytest.mark.anyio

KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
)
KEYS += ("minItems", "maxItems", "format")


def number(value: Any) -> Any:
    """1.0 and 1 are the same bound (FastAPI renders some bounds of body models as floats)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def constraints(schema: dict[str, Any]) -> set[tuple[str, str]]:
    """The constraint keywords of one property, its own and those of its non-null anyOf branches."""
    found = {(k, json.dumps(number(schema[k]), sort_keys=True)) for k in KEYS if k in schema}
    for branch in schema.get("anyOf", []):
        if branch.get("type") != "null":
            found |= constraints(branch)
    return found


def rest_properties(spec: dict[str, Any], path: str, method: str) -> dict[str, dict[str, Any]]:
    operation = spec["paths"][path][method]
    props = {p["name"]: p["schema"] for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        name = body["$ref"].rsplit("/", 1)[-1]
        props.update(spec["components"]["schemas"][name]["properties"])
    return props


async def test_mcp_arguments_carry_the_rest_constraints(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    spec = (await client.get("/api/v1/openapi.json")).json()
    compared = 0
    for op in REGISTRY.values():
        if not op.mcp or op.input is None:
            continue
        rest = rest_properties(spec, "/api/v1" + op.path, op.method.lower())
        tool = build_tool(platform, op).parameters["properties"]
        for name, schema in rest.items():
            if name not in tool or name == "idempotency_key":  # MCP requires the key on spending tools
                continue
            assert constraints(tool[name]) == constraints(schema), f"{op.name}.{name}"
            compared += bool(constraints(schema))
    assert compared >= 40  # offsets, cents, enums, patterns, lengths ...
