"""The OAuth authorization server and its consent page run registered operations (issue 20.1): each one
the OAuth door or the dashboard names is registered, with its effect declared, and served by its own door
only (never by REST, MCP or legacy)."""

from __future__ import annotations

import ast
from pathlib import Path

from proxyplane.operations import REGISTRY
from proxyplane.ops import Auth, Effect, served

SRC = Path(__file__).resolve().parents[3] / "src" / "proxyplane"
DOORS = {
    "oauth": [SRC / "adapters" / "oauth" / "provider.py"],
    "web": [SRC / "adapters" / "web" / "consent.py", SRC / "adapters" / "web" / "keys.py"],
}


def named_operations(path: Path, prefix: str) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(prefix)
    }


def test_the_oauth_doors_name_only_registered_operations_of_their_own_door() -> None:
    prefixes = {"oauth": "oauth_", "web": "web_oauth_"}
    for door, paths in DOORS.items():
        named = set().union(*(named_operations(p, prefixes[door]) for p in paths))
        assert named, door
        for name in named:
            op = REGISTRY[name]  # KeyError: the door runs an operation that is not registered
            assert op.doors == frozenset({door}) and not op.mcp, name


def test_oauth_operations_are_never_served_to_customers_by_rest_mcp_or_legacy() -> None:
    oauth = {name: op for name, op in REGISTRY.items() if name.startswith(("oauth_", "web_oauth_"))}
    assert len(oauth) == 15
    customer_doors = set(served("rest")) | set(served("mcp")) | set(served("legacy"))
    assert not set(oauth) & customer_doors
    writes = {name for name, op in oauth.items() if op.effect == Effect.WRITE}
    assert {"oauth_exchange_code", "oauth_rotate_refresh_token", "oauth_revoke", "web_oauth_approve"} <= (
        writes
    )
    assert not {name for name, op in oauth.items() if op.effect == Effect.SPENDS_MONEY}
    # the authorization server's client was authenticated by the SDK; the consent needs the signed-in customer
    assert {op.auth for name, op in oauth.items() if name.startswith("oauth_")} == {Auth.NONE}
    assert {op.auth for name, op in oauth.items() if name.startswith("web_oauth_")} == {Auth.KEY}
