"""An allocation takes exactly what it asks for, whatever plan PostgreSQL chooses (issue 15).

`UPDATE stock_ips ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)` was planned, with a small
table's statistics, as a nested-loop semi-join that rescans the locking subquery for every outer row;
each rescan skipped the rows the statement had just updated and returned the next n, so an order of 8
took 16 IPs (seen in test runs on PostgreSQL). The picks now run once, as an InitPlan
(`allocate.picked_ids`): the plan of the real statement has no join left that could rescan them."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from sqlalchemy import event, func, select, text

from proxyplane.domains.stock import allocate
from proxyplane.platform import Platform
from proxyplane.storage.models import ServiceIp, StockIp
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import make_account

pytestmark = pytest.mark.anyio


def _literal(value: Any) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime.datetime):
        value = value.isoformat()
    return "'" + str(value).replace("'", "''") + "'"


async def test_an_allocation_takes_what_it_asks_and_its_picks_run_once(platform: Platform) -> None:
    await fresh_stock(platform, "proxy_datacenter", "LV", 40, capacity=1)
    svc = await make_service(platform, await make_account(platform), "proxy_datacenter")
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, params: Any, *args: Any) -> None:
        seen.append((statement, params))

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", keep)
    try:
        async with platform.db.unit_of_work() as uow:
            postgres = uow.dialect == "postgresql"
            got = await allocate.take(uow.session, svc.service_id, "proxy_datacenter", "maxmind", [("LV", 8)])
            held = await uow.session.scalar(
                select(func.count()).select_from(ServiceIp).where(ServiceIp.service_id == svc.service_id)
            )
            taken = await uow.session.scalar(
                select(func.count()).where(
                    StockIp.country_maxmind == "LV", StockIp.retired_at.is_(None), StockIp.assigned_count > 0
                )
            )
            plan = ""
            if postgres:
                sql, args = next((s, p) for s, p in seen if "FOR UPDATE SKIP LOCKED" in s)
                name = f"pick_{uuid.uuid4().hex[:8]}"
                await uow.session.execute(text(f"PREPARE {name} AS {sql}"))
                rows = await uow.session.execute(
                    text(f"EXPLAIN EXECUTE {name}({', '.join(_literal(a) for a in args)})")
                )
                plan = "\n".join(r[0] for r in rows)
            await uow.rollback()
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert (len(got), held, taken) == (8, 8, 8)
    if plan:  # the locking picks are an InitPlan, run once; no join that could rescan them
        assert "InitPlan" in plan and "LockRows" in plan, plan
        assert "Join" not in plan and "Nested Loop" not in plan, plan
