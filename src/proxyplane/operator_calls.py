"""How `ops.invoke` runs an operator operation (issue 33): the caller's role must hold the operation's
permission (403 naming it, on every door: CLI, operator API, console); the handler runs in one unit of
work and a write appends its audit row (who, role, door, what, target, before -> after, input, address)
in that same unit of work, so an action and its record commit together or not at all. A door's once-only
key (a console form's token, the operator API's Idempotency-Key) is the audit row's unique `form_key`:
the same form sent twice acts once (the second call: AlreadyApplied). Secrets never reach the row:
`masked` replaces every value whose field name says secret, password, token or code.
A refused attempt of a known operator is a row too (outcome "refused", the missing permission), written
in a unit of work of its own since nothing else runs: `check_role`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from proxyplane.core.errors import AlreadyApplied, Forbidden, Unauthorized
from proxyplane.domains.operators.resellers import check_bound
from proxyplane.domains.operators.roles import needed, require
from proxyplane.ops import Caller, Context, Effect, Operation, check_guards
from proxyplane.storage.models.operators import OperatorAudit
from proxyplane.storage.repos import operators as repo

if TYPE_CHECKING:
    from proxyplane.platform import Platform

_SECRET_WORDS = ("secret", "password", "token", "totp", "recovery", "code", "api_key", "credential")
TARGET_FIELDS = (
    "email",
    "customer_id",
    "service_id",
    "ticket_id",
    "operator_email",
    "pool",
    "kind",
    "prefix",
)


def masked(value: Any) -> Any:
    """`value` (JSON-like) with the value of every secret-named key replaced by "***"."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {
            k: "***" if any(w in str(k).lower() for w in _SECRET_WORDS) else masked(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _target(data: BaseModel | None) -> str:
    if data is None:
        return ""
    for name in TARGET_FIELDS:
        value = getattr(data, name, None)
        if value not in (None, ""):
            return f"{name}:{value}"
    return ""


def _detail(data: BaseModel | None) -> Any:
    if data is None:
        return None
    try:
        return masked(data.model_dump(mode="json", exclude_none=True))
    except Exception:  # noqa: BLE001 - an input not validated (model_construct): its fields as given
        return masked({k: v for k, v in vars(data).items() if v is not None})


async def check_role(
    platform: Platform, op: Operation, caller: Caller, data: BaseModel | None = None
) -> None:
    """Refuse (403 naming the permission) a caller whose role may not run `op`, and record the refusal:
    who tried what, on which target, from where (outcome "refused", its own committed unit of work)."""
    if not caller.role:
        raise Unauthorized("an operator's sign-in or operator API key is required")
    try:
        require(caller.role, needed(caller.role, op.permission, op.reseller), op.name)
    except Forbidden as exc:
        async with platform.db.unit_of_work() as uow:
            await repo.append_audit(
                uow.session,
                operator_id=caller.operator_id,
                actor=caller.actor or caller.channel,
                role=caller.role,
                door=caller.channel,
                action=op.name,
                target=_target(data),
                before=None,
                after={"error": "forbidden", "missing_permission": exc.extra.get("missing_permission")},
                detail=_detail(data),
                client_ip=caller.client_ip,
                outcome="refused",
            )
            await uow.commit()
        raise exc


async def invoke_operator(
    platform: Platform, op: Operation, caller: Caller, data: BaseModel | None, *, door_key: str | None = None
) -> Any:
    await check_role(platform, op, caller, data)
    write = op.effect != Effect.READ
    async with platform.db.unit_of_work(write=write) as uow:
        if write and door_key is not None:
            used = await uow.session.execute(
                select(OperatorAudit.id).where(OperatorAudit.form_key == door_key)
            )
            if used.first() is not None:
                raise AlreadyApplied(f"this {op.name} request was already sent; it ran once")
        ctx = Context(uow, caller, platform, door_key=door_key)
        await check_bound(uow.session, op, caller, data)  # a reseller: its own customers only (404)
        result = await op.handler(ctx, data)
        check_guards(uow, caller, result, None, op_name=op.name, spends=op.effect == Effect.SPENDS_MONEY)
        if write:
            try:
                await repo.append_audit(
                    uow.session,
                    operator_id=caller.operator_id,
                    actor=caller.actor or caller.channel,
                    role=caller.role,
                    door=caller.channel,
                    action=op.name,
                    target=str(ctx.audit.get("target") or _target(data)),
                    before=masked(ctx.audit.get("before")),
                    after=masked(ctx.audit.get("after", result)),
                    detail=masked(data.model_dump(mode="json", exclude_none=True))
                    if data is not None
                    else None,
                    client_ip=caller.client_ip,
                    form_key=door_key,
                )
            except IntegrityError:
                if door_key is None:
                    raise
                raise AlreadyApplied(f"this {op.name} request was already sent; it ran once") from None
        await uow.commit(final=True)
    return result
