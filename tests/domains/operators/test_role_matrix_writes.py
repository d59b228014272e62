"""The role matrix's other half (issue 33, "every operator operation x every role"): test_roles.py runs
the refusals and the allowed reads; here every allowed pair, writes included, passes the real gate
(operator_calls.check_role, as invoke runs it) and records no refusal, and a write with required fields,
invoked with an empty input, gets past the gate to its handler (refused there, never 403)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from proxyplane.core.errors import Forbidden
from proxyplane.domains.operators.roles import RESELLER, ROLES, allowed, needed
from proxyplane.domains.operators.service import by_email
from proxyplane.operations import REGISTRY
from proxyplane.operator_calls import check_role
from proxyplane.ops import Effect, invoke
from proxyplane.platform import Platform
from proxyplane.storage.models.operators import OperatorAudit
from tests.domains.operators.helpers import make_operator, operator_caller

pytestmark = pytest.mark.anyio
OPERATOR_OPS = {name: op for name, op in REGISTRY.items() if op.permission}


async def refusals(platform: Platform, actor: str) -> int:
    async with platform.db.unit_of_work() as uow:
        found = await uow.session.execute(
            select(func.count()).where(OperatorAudit.actor == actor, OperatorAudit.outcome == "refused")
        )
        return int(found.scalar_one())


@pytest.mark.parametrize("role", list(ROLES))
async def test_every_allowed_pair_passes_the_gate_writes_included(platform: Platform, role: str) -> None:
    email, _, _ = await make_operator(platform, role)
    async with platform.db.unit_of_work() as uow:
        operator = await by_email(uow.session, email)
        assert operator is not None
    caller = operator_caller(role, email, operator.id)
    passed: list[str] = []
    for name, op in OPERATOR_OPS.items():
        if not allowed(role, needed(role, op.permission, op.reseller)):
            continue
        assert op.input is not None
        await check_role(platform, op, caller, op.input.model_construct())  # raises Forbidden if refused
        passed.append(name)
        required = [f for f, info in op.input.model_fields.items() if info.is_required()]
        if op.effect != Effect.READ and required:  # empty input: past the gate, refused by the handler
            try:
                await invoke(platform, op, caller, op.input.model_construct())
            except Forbidden as exc:
                raise AssertionError(f"{role} refused {name} at the gate: {exc.message}") from exc
            except Exception:  # noqa: BLE001, S110 - the handler refuses the empty input: past the gate
                pass
    writes = [n for n in passed if OPERATOR_OPS[n].effect != Effect.READ]
    assert await refusals(platform, email) == 0  # no allowed pair was refused and audited as such
    if role == "viewer":  # a viewer writes only its own account (its sessions)
        assert writes and all(OPERATOR_OPS[n].permission == "account.self" for n in writes), writes
    else:
        assert any(OPERATOR_OPS[n].permission != "account.self" for n in writes), (role, writes)
    if role == "owner":
        assert set(passed) == set(OPERATOR_OPS)
    if role == RESELLER:
        assert all(OPERATOR_OPS[n].reseller for n in passed)
