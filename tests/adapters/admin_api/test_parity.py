"""Registry parity for the operator's doors (issue 33): every operator operation is served by each door
it declares and by no other: the CLI (`proxyplane admin operator call NAME` runs any of them, the named
commands some), the operator API (its OpenAPI document lists exactly the admin_api operations), the
console (its page modules name exactly the console operations)."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
import pytest

from proxyplane.operations import REGISTRY
from proxyplane.ops import OPERATOR_DOORS

pytestmark = pytest.mark.anyio
CONSOLE = Path(__file__).resolve().parents[3] / "src" / "proxyplane" / "adapters" / "admin"
OPERATOR_OPS = {name: op for name, op in REGISTRY.items() if op.permission}


def named_in(folder: Path) -> set[str]:
    names: set[str] = set()
    for module in folder.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in REGISTRY:
                names.add(node.value)
    return names


def test_every_operator_operation_is_on_the_cli_and_only_on_operator_doors() -> None:
    for name, op in OPERATOR_OPS.items():
        assert "cli" in op.doors and op.doors <= OPERATOR_DOORS, name


def test_the_console_runs_exactly_its_operations() -> None:
    console = {name for name, op in REGISTRY.items() if op.serves("console")}
    assert named_in(CONSOLE) == console
    assert {"operator_wallet_credit", "operator_service_suspend", "operator_audit_list"} <= console


async def test_the_operator_api_serves_exactly_its_operations(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/api/admin/v1/openapi.json")).json()
    routes = {
        route["operationId"]: (method.upper(), path)
        for path, item in doc["paths"].items()
        for method, route in item.items()
    }
    api = {name: op for name, op in OPERATOR_OPS.items() if op.serves("admin_api")}
    assert set(routes) == set(api)
    for name, op in api.items():
        assert routes[name] == (op.method, op.path), name
        assert f"`{op.permission}`" in doc["paths"][op.path][op.method.lower()]["description"]
