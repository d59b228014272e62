"""Doors over one registry (issue 20): the operator's operations are served by the CLI and the operator's
own doors (issue 33: the operator API, the console; tests/adapters/admin_api/test_parity.py), never by a
customer's."""

from __future__ import annotations

import ast
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.adapters.rest.app import API_PREFIX
from proxyplane.operations import REGISTRY
from proxyplane.ops import OPERATOR_DOORS, Auth, served
from tests.adapters.mcp.conftest import app, mcp_client, rest  # noqa: F401  (fixtures)
from tests.support import Account

CLI = Path(__file__).resolve().parents[1] / "src" / "proxyplane" / "cli"


def test_every_admin_command_runs_a_registered_operator_operation() -> None:
    """The admin command modules open no unit of work and call no domain service: each command names an
    `operator_*` operation, and each of those is served by the CLI door (among the operator's doors),
    without a customer API key, behind a permission."""
    named: set[str] = set()
    for module in sorted(CLI.glob("admin*.py")):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("proxyplane.storage"), (module.name, node.module)
                assert not node.module.endswith(".service") or node.names[0].name.isupper(), module.name
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.startswith("operator_"):
                    named.add(node.value)
    operator = {name for name, op in REGISTRY.items() if name.startswith("operator_")}
    assert named and named <= operator, named - operator
    for name in operator:
        op = REGISTRY[name]
        assert "cli" in op.doors and op.doors <= OPERATOR_DOORS, name
        assert op.auth == Auth.NONE and not op.mcp and op.permission, name


@pytest.mark.anyio
async def test_operator_operations_are_never_served_by_rest_or_mcp(
    app: FastAPI,  # noqa: F811
    rest: httpx.AsyncClient,  # noqa: F811
    account: Account,
) -> None:
    operator = {name for name, op in REGISTRY.items() if op.permission}
    assert operator and not operator & (set(served("rest")) | set(served("mcp")) | set(served("legacy")))
    openapi = (await rest.get(f"{API_PREFIX}/openapi.json")).json()
    ids = {route.get("operationId") for path in openapi["paths"].values() for route in path.values()}
    assert not operator & ids
    assert not [p for p in openapi["paths"] if p.startswith(f"{API_PREFIX}/admin")]
    async with mcp_client(app, await account.key()) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
    assert tools and not operator & tools
    response = await rest.post(f"{API_PREFIX}/admin/stock_show", json={})
    assert response.status_code in (404, 405)


def test_only_rest_and_mcp_share_operations() -> None:
    """Cross-door parity reduces to REST vs MCP (tests/adapters/mcp/test_parity.py,
    tests/test_door_parity_errors.py): every other door (legacy, web, oauth, cli) serves operations of its
    own, except the legacy door's balance read, which takes no input and no id (its scope is checked by
    the same invoke), and the operator's operations (their own doors: tests/adapters/admin_api)."""
    shared = {
        name: sorted(op.doors)
        for name, op in REGISTRY.items()
        if len(op.doors) > 1 and not op.doors <= {"rest", "mcp"} and not op.permission
    }
    assert shared == {"get_balance": ["legacy", "mcp", "rest"]}
    assert REGISTRY["get_balance"].input is None
