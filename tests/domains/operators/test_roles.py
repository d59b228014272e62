"""The role matrix (issue 33): every operator operation x every role, refused (403 naming the missing
permission) or let through as roles.py's one table says; the docs carry that table as generated."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxyplane.core.errors import Forbidden
from proxyplane.domains.operators.roles import (
    PERMISSIONS,
    RESELLER,
    RESELLER_ONLY,
    ROLES,
    allowed,
    markdown_table,
    needed,
)
from proxyplane.domains.operators.service import by_email
from proxyplane.operations import REGISTRY
from proxyplane.ops import Effect
from proxyplane.platform import Platform
from tests.domains.operators.helpers import make_operator, operator_caller

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
    reseller_id = None
    if role == RESELLER:  # a reseller acts as itself: a real one (with no customer)
        email, _, _ = await make_operator(platform, RESELLER)
        async with platform.db.unit_of_work() as uow:
            reseller_id = (await by_email(uow.session, email)).id  # type: ignore[union-attr]
    for name, op in OPERATOR_OPS.items():
        assert op.input is not None
        data = op.input.model_construct()
        caller = operator_caller(role, operator_id=reseller_id if role == RESELLER else None)
        permission = needed(role, op.permission, op.reseller)  # a reseller's own, where it has one
        if not allowed(role, permission):
            with pytest.raises(Forbidden) as info:
                await _invoke(platform, name, caller, data)
            assert info.value.extra["missing_permission"] == permission
            assert permission in info.value.message and role in info.value.message
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
    assert ROLES["owner"] == frozenset(PERMISSIONS) - RESELLER_ONLY
    assert all(p.endswith(".read") or p == "account.self" for p in ROLES["viewer"])
    assert "operators.manage" not in ROLES["admin"]


def test_the_docs_carry_the_generated_role_table() -> None:
    assert markdown_table() in DOCS.read_text()


def test_a_reseller_holds_no_staff_permission_and_no_staff_role_a_reseller_one() -> None:
    """Resellers (issue 33.4): the reseller role holds only its own permissions (each bound to its own
    customers) and account.self; no staff role holds one of them."""
    assert ROLES[RESELLER] == RESELLER_ONLY | {"account.self"}
    for role, held in ROLES.items():
        assert role == RESELLER or not held & RESELLER_ONLY, role


def test_every_reseller_operation_says_how_it_is_bound_to_the_resellers_customers() -> None:
    """An operation a reseller may run names the input field of the one customer it acts on (checked
    before its handler: 404 for another's), or is one of those that filter by the reseller themselves."""
    from proxyplane.domains.operators.resellers import BOUND_BY

    filtering = {  # lists filtered to its customers, a creation that binds, one's own sessions and wallet
        "operator_customer_search",
        "operator_service_list",
        "operator_ticket_list",
        "operator_create_customer",
        "operator_my_sessions",
        "operator_session_revoke",
        "operator_reseller_wallet",
    }
    for name, op in OPERATOR_OPS.items():
        if not op.reseller:
            assert not op.bound_by, name
            continue
        assert op.reseller in ROLES[RESELLER], name
        if op.bound_by:
            assert (
                op.bound_by in BOUND_BY and op.input is not None and op.bound_by in op.input.model_fields
            ), name
        else:
            assert name in filtering, name
    assert {n for n, op in OPERATOR_OPS.items() if op.reseller and not op.bound_by} == filtering
