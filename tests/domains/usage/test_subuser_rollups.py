"""Sub-users' hourly/daily rollups and exit-IP failures (issue 18): written by the gateway's usage sink with
the minutes (two nodes' overlapping flushes add up), each bucket equals the sum of its minutes, every read
(totals, series per minute/hour/day, destinations, errors by category and by exit IP) over long, ragged
windows equals the minute-level answer, and the sub-users' usage sums exactly to the service's."""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from proxyplane.core.settings import Settings
from proxyplane.domains.usage import service as usage
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from proxyplane.storage.models.subuser_rollups import SubuserUsageErrorRollup, SubuserUsageRollup
from proxyplane.storage.models.subusers import SubuserUsageError, SubuserUsageMinute
from proxyplane.storage.rollups import bucket
from tests.domains.subusers.support import service_with_subusers

pytestmark = pytest.mark.anyio

BASE = datetime(2026, 6, 10, 21, 40, tzinfo=UTC)  # 3 days from here: crosses 3 midnights
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")
EXITS = ("127.0.0.21", "127.0.0.22")


def traffic(rng: random.Random, ids: list[str], n: int) -> list[UsageRow]:
    """What the gateway meters for the sub-users (metering ids "<service>/<pk>"), over 3 days."""
    rows = []
    for _ in range(n):
        errors = {c: rng.randrange(1, 3) for c in ("limit", "refused") if rng.random() < 0.3}
        exit_errors = {(rng.choice(EXITS), "refused"): errors["refused"]} if "refused" in errors else {}
        rows.append(
            UsageRow(
                rng.choice(ids),
                BASE + timedelta(minutes=rng.randrange(3 * 1440)),
                rng.choice(("a.example", "b.example", "")),
                requests=rng.randrange(1, 40),
                connections=rng.randrange(3),
                bytes_up=rng.randrange(5000),
                bytes_down=rng.randrange(50_000),
                errors=errors,
                exit_errors=exit_errors,
            )
        )
    return rows


@pytest.fixture(scope="module")
async def metered(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[uuid.UUID, list[int]]:
    """A service whose traffic is all its two sub-users', written by two nodes (overlapping rows); made
    once for the module's tests."""
    settings = Settings(home=tmp_path_factory.mktemp("rollups"), database_url=database_url)
    platform = Platform(settings, Database(settings.resolved_database_url()))
    try:
        _customer, sid, pks = await service_with_subusers(platform, [None, None])
        rows = traffic(random.Random(19), [f"{sid}/{pk}" for pk in pks], 400)
        for i in range(0, 260, 90):
            await write_usage(platform.db, rows[i : min(i + 90, 260)])
        await write_usage(platform.db, rows[200:])  # rows 200..259 are flushed by both nodes
    finally:
        await platform.close()
    return sid, pks


async def test_rollups_equal_the_sum_of_their_minutes(
    platform: Platform, metered: tuple[uuid.UUID, list[int]]
) -> None:
    _sid, pks = metered
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        minutes = await s.execute(select(SubuserUsageMinute).where(SubuserUsageMinute.subuser_pk.in_(pks)))
        errors = await s.execute(select(SubuserUsageError).where(SubuserUsageError.subuser_pk.in_(pks)))
        rollups = await s.execute(select(SubuserUsageRollup).where(SubuserUsageRollup.subuser_pk.in_(pks)))
        erollups = await s.execute(
            select(SubuserUsageErrorRollup).where(SubuserUsageErrorRollup.subuser_pk.in_(pks))
        )
        want: dict[tuple[Any, ...], Counter[str]] = defaultdict(Counter)
        for m in minutes.scalars():
            for span in ("h", "d"):
                key = (m.subuser_pk, span, bucket(m.minute, span), m.host)
                want[key].update({c: getattr(m, c) for c in COUNTERS})
        got = {
            (r.subuser_pk, r.span, r.bucket, r.host): Counter({c: getattr(r, c) for c in COUNTERS})
            for r in rollups.scalars()
        }
        ewant: Counter[tuple[Any, ...]] = Counter()
        for e in errors.scalars():
            for span in ("h", "d"):
                ewant[(e.subuser_pk, span, bucket(e.minute, span), e.category)] += e.count
        egot = {(r.subuser_pk, r.span, r.bucket, r.category): r.count for r in erollups.scalars()}
    assert {k: +v for k, v in got.items()} == {k: +v for k, v in want.items()} and len(got) == len(want)
    assert sum(k[1] == "d" for k in got) >= 2 * 4 and egot == dict(ewant) and egot


async def reference(platform: Platform, pk: int, start: datetime, end: datetime) -> dict[str, Any]:
    """The minute-level answer for one sub-user, straight from its minute tables."""
    start = start.replace(second=0, microsecond=0)
    m, e = SubuserUsageMinute, SubuserUsageError
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        w = (m.subuser_pk == pk, m.minute >= start, m.minute < end)
        sums = [func.coalesce(func.sum(getattr(m, c)), 0) for c in COUNTERS]
        total = tuple(int(v) for v in (await s.execute(select(*sums).where(*w))).one())
        per_host = await s.execute(
            select(m.host, *(func.sum(getattr(m, c)) for c in COUNTERS)).where(*w).group_by(m.host)
        )
        ew = (e.subuser_pk == pk, e.minute >= start, e.minute < end)
        cats = await s.execute(select(e.category, func.sum(e.count)).where(*ew).group_by(e.category))
    return {
        "total": total,
        "hosts": {h: tuple(int(v) for v in vals) for h, *vals in per_host.all()},
        "errors": {c: int(n) for c, n in cats.all()},
    }


def as_tuple(t: usage.Totals) -> tuple[int, ...]:
    return (t.requests, t.connections, t.bytes_up, t.bytes_down, t.errors)


def column_sums(points: list[tuple[datetime, usage.Totals]]) -> tuple[int, ...]:
    return tuple(sum(as_tuple(t)[i] for _, t in points) for i in range(len(COUNTERS)))


WINDOWS = [
    (BASE, BASE + timedelta(days=3)),
    (BASE + timedelta(minutes=19, seconds=30), BASE + timedelta(days=2, hours=5, minutes=3, seconds=1)),
    (BASE + timedelta(hours=2, minutes=20), BASE + timedelta(hours=2, minutes=50)),  # minutes only
    (BASE + timedelta(hours=2, minutes=20), BASE + timedelta(days=1, hours=2, minutes=20)),  # midnight
]


@pytest.mark.parametrize("start,end", WINDOWS)
async def test_reads_over_long_windows_equal_the_minutes_and_sum_to_the_service(
    platform: Platform, metered: tuple[uuid.UUID, list[int]], start: datetime, end: datetime
) -> None:
    sid, pks = metered
    whole: list[tuple[int, ...]] = []
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        service_total = await usage.totals(s, sid, start, end)
        service_exits = await usage.errors_by_exit_ip(s, sid, start, end)
        exits: dict[str, Counter[str]] = defaultdict(Counter)
        for pk in pks:
            ref = await reference(platform, pk, start, end)
            t = await usage.totals(s, sid, start, end, subuser=pk)
            assert as_tuple(t) == ref["total"] and t.errors_by_category == ref["errors"]
            for resolution in ("minute", "hour", "day"):
                points = await usage.series(s, sid, start, end, resolution, subuser=pk)
                assert column_sums(points) == ref["total"], resolution
            top = await usage.top_destinations(s, sid, start, end, 10, subuser=pk)
            assert {h: as_tuple(v) for h, v in top} == ref["hosts"]
            for ip, cats in (await usage.errors_by_exit_ip(s, sid, start, end, subuser=pk)).items():
                exits[ip].update(cats)
            whole.append(as_tuple(t))
    # all of the service's traffic was its sub-users': their usage sums exactly to the service's
    assert tuple(map(sum, zip(*whole, strict=True))) == as_tuple(service_total)
    assert {ip: dict(c) for ip, c in exits.items()} == service_exits
    if end - start > timedelta(days=1):
        assert service_total.requests > 0 and service_exits
