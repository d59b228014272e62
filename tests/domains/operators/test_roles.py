"""The role matrix (issue 33): every operator operation x every role, refused (403 naming the missing
permission) or let through as roles.py's one table says; the docs carry that table as generated."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyplane.core.errors import Forbidden
from proxyplane.domains.operators.roles import PERMISSIONS, ROLES, allowed, markdown_table
from proxyplane.operations import REGISTRY
from proxyplane.ops import Effect
from proxyplane.platform import Platform
from tests.domains.operators.helpers import operator_caller

pytestmark = pytest.mark.anyio
DOCS = Path(__file__).resolve().parents[3] / "docs" / "decisions" / "operators.md"
OPERATOR_OPS = {name: op for name, op in REGISTRY.items() if op.permission}


def test_every_operator_operation_declares_a_known_permission() -> None:
    assert {n for n in REGISTRY if n.startswith("operator_")} == set(OPERATOR_OPS)
    assert len(OPERATOR_OPS) >= 40
    for name, op in OPERATOR_OPS.items():
        assert op.permission in PERMISSIONS, name
        assert "cli" in op.doors and not op.doors & {"rest", "mcp", "legacy", "web"}, name


@pytest.mark.parametrize("role", list(ROLES))
async def test_role_matrix(platform: Platform, role: str) -> None:
    """Refused before anything runs for a role without the permission; let through otherwise (a read runs;
    a write is only checked to pass the gate: its input here is empty, so the handler refuses it)."""
    refused = let_through = 0
    for name, op in OPERATOR_OPS.items():
        assert op.input is not None
        data = op.input.model_construct()
        caller = operator_caller(role)
        if not allowed(role, op.permission):
            with pytest.raises(Forbidden) as info:
                await _invoke(platform, name, caller, data)
            assert info.value.extra["missing_permission"] == op.permission
            assert op.permission in info.value.message and role in info.value.message
            refused += 1
        elif op.effect == Effect.READ and name != "operator_audit_list":
            try:
                await _invoke(platform, name, caller, data)
            except Forbidden as exc:  # pragma: no cover - the assertion below says which
                raise AssertionError(f"{role} refused {name}") from exc
            except Exception:  # noqa: BLE001 - an empty input may be refused by the handler: past the gate
                pass
            let_through += 1
    assert refused + let_through > 0
    assert (refused == 0) == (role == "owner")


async def _invoke(platform: Platform, name: str, caller: object, data: object) -> object:
    from proxyplane.ops import invoke

    return await invoke(platform, REGISTRY[name], caller, data)  # type: ignore[arg-type]


def test_owner_holds_everything_and_viewer_writes_nothing() -> None:
    assert ROLES["owner"] == frozenset(PERMISSIONS)
    assert all(p.endswith(".read") or p == "account.self" for p in ROLES["viewer"])
    assert "operators.manage" not in ROLES["admin"]


def test_the_docs_carry_the_generated_role_table() -> None:
    assert markdown_table() in DOCS.read_text()
