"""Operators for tests, made through the registered operations as `proxyplane admin operator` does."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pyotp

from proxyplane.operations import REGISTRY
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

CLI = Caller(customer_id=None, channel="cli", role="owner", actor="cli")


async def run(
    platform: Platform, operation: str, caller: Caller = CLI, /, door_key: str | None = None, **fields: Any
) -> Any:
    op = REGISTRY[operation]
    data = op.input.model_validate(fields) if op.input is not None else None
    return await invoke(platform, op, caller, data, door_key=door_key)


def unique_operator_email() -> str:
    return f"op-{uuid.uuid4().hex[:12]}@example.com"


async def make_operator(platform: Platform, role: str) -> tuple[str, str, str]:
    """(email, one-time password, an operator API key bound to `role`)."""
    email = unique_operator_email()
    if role == "reseller":  # a reseller is made with its price and wallet (issue 33.4)
        made = await run(platform, "operator_reseller_create", operator_email=email, discount_percent=0)
    else:
        made = await run(platform, "operator_operator_create", operator_email=email, role=role)
    key = await run(platform, "operator_operator_key_create", operator_email=email, name="test", role=role)
    return email, made["one_time_password"], key["secret"]


def code_now(secret: str, offset_steps: int = 0) -> str:
    return pyotp.TOTP(secret).at(time.time() + 30 * offset_steps)


def operator_caller(role: str, email: str = "someone@example.com", operator_id: int | None = None) -> Caller:
    return Caller(customer_id=None, channel="admin_api", role=role, actor=email, operator_id=operator_id)


async def make_reseller(platform: Platform, discount_percent: int = 0) -> tuple[str, str, Caller]:
    """A reseller (issue 33.4): (email, its operator API key, a caller acting as it on the operator API)."""
    from proxyplane.domains.operators.service import by_email

    email = unique_operator_email()
    await run(platform, "operator_reseller_create", operator_email=email, discount_percent=discount_percent)
    key = await run(platform, "operator_operator_key_create", operator_email=email, name="t", role="reseller")
    async with platform.db.unit_of_work() as uow:
        found = await by_email(uow.session, email)
        assert found is not None
    return email, key["secret"], operator_caller("reseller", email, found.id)
