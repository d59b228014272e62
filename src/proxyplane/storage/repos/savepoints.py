"""Savepoints of a unit of work (issue 31: the SQL text left domains/orders and domains/stock). Rolling
back to a savepoint also takes back the price guard's count of what was debited after it was opened
(storage/repos/wallet.py counts per ledger entry written, and the rollback removes those entries)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.call import call_context
from proxyplane.storage.driver import DriverScript, DriverStatement

_OPEN: dict[str, DriverStatement] = {}
_ROLLBACK: dict[str, DriverStatement] = {}
# for the rest of the savepoint it runs in: a generic plan for the statements that follow (see
# storage/repos/orders.py); sent with the SAVEPOINT as ONE simple query on PostgreSQL
_GENERIC_PLANS = "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"
_OPEN_GENERIC: dict[str, DriverScript] = {}


def _mark(session: AsyncSession, name: str) -> None:
    call = call_context(session)
    call.savepoint_marks[name] = call.debited_cents


async def open_savepoint(session: AsyncSession, name: str, generic_plans: bool = False) -> None:
    """`SAVEPOINT name` (with `generic_plans`: and the generic plan setting, one round trip)."""
    _mark(session, name)
    if generic_plans:
        script = _OPEN_GENERIC.get(name)
        if script is None:
            script = _OPEN_GENERIC[name] = DriverScript(f"SAVEPOINT {name}", _GENERIC_PLANS)
        await script.run(session)
        return
    stmt = _OPEN.get(name)
    if stmt is None:
        stmt = _OPEN[name] = DriverStatement(text(f"SAVEPOINT {name}"))
    await stmt.rows(session)


async def rollback_to(session: AsyncSession, name: str) -> None:
    """`ROLLBACK TO SAVEPOINT name`, and the debited count as it was when it was opened."""
    stmt = _ROLLBACK.get(name)
    if stmt is None:
        stmt = _ROLLBACK[name] = DriverStatement(text(f"ROLLBACK TO SAVEPOINT {name}"))
    await stmt.rows(session)
    call = call_context(session)
    mark = call.savepoint_marks.get(name)
    if mark is not None:
        call.debited_cents = mark
