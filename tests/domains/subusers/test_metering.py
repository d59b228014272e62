"""apply_usage (issue 18): sub-user minutes and errors add up across flushes, counters move, the 80 % and
100 % events are written once each, limit_reached is set at 100 %; a counter-only flush logs no gateway
change while reaching the limit does (migration 0018b triggers); the statement count of a flush does not
grow with the number of sub-users."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, func, select

from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.platform import Platform
from proxyplane.storage.models import Event
from proxyplane.storage.models.gateway_changes import GatewayChange
from proxyplane.storage.models.subusers import (
    ServiceSubuser,
    SubuserUsageError,
    SubuserUsageMinute,
    SubuserWhitelist,
)
from tests.domains.subusers.support import service_with_subusers

pytestmark = pytest.mark.anyio

MINUTE = datetime(2026, 5, 4, 10, 7, tzinfo=UTC)


def minute_row(pk: int, host: str, up: int, down: int, requests: int = 1) -> dict[str, Any]:
    return {
        "subuser_pk": pk,
        "minute": MINUTE,
        "host": host,
        "requests": requests,
        "connections": 1,
        "bytes_up": up,
        "bytes_down": down,
        "errors": 0,
    }


async def flush(platform: Platform, minutes: list[dict[str, Any]], errors: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
    async with platform.db.unit_of_work() as uow:
        await apply_usage(uow.session, minutes, list(errors))
        await uow.commit()


async def change_seq(platform: Platform, sid: uuid.UUID) -> int | None:
    key = sid.hex if platform.db.is_sqlite else str(sid)
    async with platform.db.unit_of_work(write=False) as uow:
        return (await uow.session.execute(select(GatewayChange.seq).where(GatewayChange.key == key))).scalar()


async def events(platform: Platform, customer_id: int) -> list[tuple[str, dict[str, Any]]]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Event.type, Event.data).where(Event.customer_id == customer_id).order_by(Event.created_at)
        )
        return [(t, d) for t, d in rows.all() if t.startswith("subuser.")]


async def subuser(platform: Platform, pk: int) -> ServiceSubuser:
    async with platform.db.unit_of_work(write=False) as uow:
        sub = await uow.session.get(ServiceSubuser, pk)
        assert sub is not None
        return sub


async def test_usage_adds_up_and_thresholds_fire_once(platform: Platform) -> None:
    customer, sid, (a, b) = await service_with_subusers(platform, [1000, None])
    seq0 = await change_seq(platform, sid)
    assert seq0 is not None  # the inserts logged a change of the service

    await flush(platform, [minute_row(a, "x.example", 100, 400), minute_row(b, "x.example", 10, 20)])
    await flush(
        platform,
        [minute_row(a, "x.example", 50, 250, requests=2)],
        [{"subuser_pk": a, "minute": MINUTE, "host": "x.example", "category": "upstream", "count": 3}],
    )
    sub_a = await subuser(platform, a)
    assert (sub_a.used_bytes, sub_a.used_requests, sub_a.notified_pct, sub_a.limit_reached) == (
        800,
        3,
        80,
        False,
    )
    assert [t for t, _d in await events(platform, customer)] == ["subuser.usage_80"]
    assert await change_seq(platform, sid) == seq0  # counters and notified_pct alone: no gateway change

    await flush(platform, [minute_row(a, "y.example", 0, 300), minute_row(b, "y.example", 5, 5)])
    await flush(platform, [minute_row(a, "y.example", 0, 10)])
    sub_a, sub_b = await subuser(platform, a), await subuser(platform, b)
    assert (sub_a.used_bytes, sub_a.notified_pct, sub_a.limit_reached) == (1110, 100, True)
    assert (sub_b.used_bytes, sub_b.notified_pct, sub_b.limit_reached) == (40, 0, False)
    got = await events(platform, customer)
    assert [t for t, _d in got] == ["subuser.usage_80", "subuser.usage_100"]
    assert got[1][1]["subuser_id"] == str(sub_a.subuser_id) and got[1][1]["used_bytes"] == 1100
    seq1 = await change_seq(platform, sid)
    assert seq1 is not None and seq1 > seq0  # limit_reached: the nodes must see it

    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        totals = (
            await s.execute(
                select(
                    SubuserUsageMinute.subuser_pk,
                    func.sum(SubuserUsageMinute.bytes_up + SubuserUsageMinute.bytes_down),
                    func.sum(SubuserUsageMinute.requests),
                )
                .where(SubuserUsageMinute.subuser_pk.in_([a, b]), SubuserUsageMinute.minute == MINUTE)
                .group_by(SubuserUsageMinute.subuser_pk)
            )
        ).all()
        assert {pk: (int(x), int(r)) for pk, x, r in totals} == {a: (1110, 5), b: (40, 2)}
        errs = (
            await s.execute(select(SubuserUsageError.count).where(SubuserUsageError.subuser_pk == a))
        ).all()
        assert [int(c) for (c,) in errs] == [3]


async def test_a_flush_jumping_past_the_limit_sends_both_events(platform: Platform) -> None:
    customer, _sid, (a,) = await service_with_subusers(platform, [100])
    await flush(platform, [minute_row(a, "z.example", 0, 500)])
    got = await events(platform, customer)
    assert [(t, d["threshold_pct"]) for t, d in got] == [("subuser.usage_80", 80), ("subuser.usage_100", 100)]


async def test_whitelist_and_watched_columns_log_a_change(platform: Platform) -> None:
    _customer, sid, (a,) = await service_with_subusers(platform, [None])
    seqs = [await change_seq(platform, sid)]
    for change in ("whitelist", "disable", "unwhitelist"):
        async with platform.db.unit_of_work() as uow:
            s = uow.session
            if change == "whitelist":
                s.add(SubuserWhitelist(subuser_pk=a, ip="127.0.0.9"))
            elif change == "disable":
                sub = await s.get(ServiceSubuser, a)
                assert sub is not None
                sub.enabled = False
            else:
                row = (
                    await s.execute(select(SubuserWhitelist).where(SubuserWhitelist.subuser_pk == a))
                ).scalar_one()
                await s.delete(row)
            await uow.commit()
        seqs.append(await change_seq(platform, sid))
    assert all(x is not None for x in seqs) and seqs == sorted(set(seqs))  # type: ignore[type-var]


async def test_statements_per_flush_do_not_grow_with_subusers(platform: Platform) -> None:
    counts = []
    for n in (3, 30):
        _customer, _sid, pks = await service_with_subusers(platform, [10**12] * n)
        seen: list[str] = []

        def count(*args: Any, seen: list[str] = seen) -> None:
            seen.append(args[2])

        engine = platform.db.engine.sync_engine
        event.listen(engine, "before_cursor_execute", count)
        try:
            await flush(platform, [minute_row(pk, "s.example", 1, 1) for pk in pks])
        finally:
            event.remove(engine, "before_cursor_execute", count)
        counts.append(len([q for q in seen if not q.lstrip().upper().startswith(("BEGIN", "COMMIT"))]))
    assert counts[0] == counts[1], counts
