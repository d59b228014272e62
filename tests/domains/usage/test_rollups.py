"""Hourly/daily rollups: written with the minutes (two nodes add up), each bucket equals the sum of its
minutes, and reads over any window (across hour and day boundaries, ragged ends) equal the minute-level
answer exactly; the CSV export reconciles with the totals."""

from __future__ import annotations

import csv
import io
import random
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from proxyplane.domains.usage import service as usage
from proxyplane.domains.usage.windows import DAY, HOUR, MINUTE, plan
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.usage_rollups import UsageErrorRollup, UsageRollup
from proxyplane.storage.repos import usage_minutes
from proxyplane.storage.rollups import bucket

pytestmark = pytest.mark.anyio

BASE = datetime(2026, 3, 1, 21, 0, tzinfo=UTC)  # 3 days from here: crosses 3 midnights
HOSTS = ("a.example", "b.example", "")
CATEGORIES = ("auth", "limit", "upstream")
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")


def random_rows(rng: random.Random, sid: str, n: int) -> list[UsageRow]:
    rows = []
    for _ in range(n):
        minute = BASE + timedelta(minutes=rng.randrange(3 * 24 * 60))
        errors = {c: rng.randrange(1, 4) for c in CATEGORIES if rng.random() < 0.3}
        rows.append(
            UsageRow(
                sid,
                minute,
                rng.choice(HOSTS),
                requests=rng.randrange(50),
                connections=rng.randrange(5),
                bytes_up=rng.randrange(10_000),
                bytes_down=rng.randrange(100_000),
                errors=errors,
            )
        )
    return rows


async def metered(platform: Platform, monkeypatch: pytest.MonkeyPatch, seed: int) -> uuid.UUID:
    """A service's usage written by two nodes (overlapping minutes and hosts), in small batches."""
    monkeypatch.setattr(usage_minutes, "BATCH", 53)
    rng = random.Random(seed)
    sid = str(uuid.uuid4())
    rows = random_rows(rng, sid, 600)
    node_a, node_b = rows[:350], rows[250:]  # rows 250..349 are written by both nodes
    for i in range(0, len(node_a), 120):
        await write_usage(platform.db, node_a[i : i + 120])
    for i in range(0, len(node_b), 200):
        await write_usage(platform.db, node_b[i : i + 200])
    return uuid.UUID(sid)


async def reference(platform: Platform, sid: uuid.UUID, start: datetime, end: datetime) -> dict[str, Any]:
    """The minute-level answer, straight from usage_minutes / usage_errors."""
    start = start.replace(second=0, microsecond=0)
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        w = (UsageMinute.service_id == sid, UsageMinute.minute >= start, UsageMinute.minute < end)
        sums = [func.coalesce(func.sum(getattr(UsageMinute, c)), 0) for c in COUNTERS]
        total = tuple(int(v) for v in (await s.execute(select(*sums).where(*w))).one())
        hosts = {
            h: tuple(int(v) for v in vals)
            for h, *vals in (
                await s.execute(
                    select(UsageMinute.host, *(func.sum(getattr(UsageMinute, c)) for c in COUNTERS))
                    .where(*w)
                    .group_by(UsageMinute.host)
                )
            ).all()
        }
        ew = (UsageError.service_id == sid, UsageError.minute >= start, UsageError.minute < end)
        errors = {
            c: int(n)
            for c, n in (
                await s.execute(
                    select(UsageError.category, func.sum(UsageError.count))
                    .where(*ew)
                    .group_by(UsageError.category)
                )
            ).all()
        }
    return {"total": total, "hosts": hosts, "errors": errors}


def as_tuple(t: usage.Totals) -> tuple[int, ...]:
    return (t.requests, t.connections, t.bytes_up, t.bytes_down, t.errors)


def test_plan_partitions_the_window_exactly() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        start = (BASE + timedelta(seconds=rng.randrange(4 * 86400))).replace(second=0)
        end = start + timedelta(
            seconds=rng.choice([1, 59, 60, 3599, 3600, 86400, 200_000, 400_000]) + rng.randrange(90)
        )
        p = plan(start, end)
        spans = sorted(
            [(a, b, MINUTE) for a, b in p.minutes]
            + [(a, b, HOUR) for a, b in p.hours]
            + [(a, b, DAY) for a, b in p.days]
        )
        assert spans[0][0] == start
        for (_, b, _), (a, _, _) in zip(spans, spans[1:], strict=False):
            assert a == b  # contiguous, disjoint
        last = spans[-1][1]
        assert last - MINUTE < end <= last  # the minutes starting before end, no more
        for a, b, step in spans:
            assert (
                a < b
                and (a - datetime(2026, 1, 1, tzinfo=UTC)) % step == timedelta(0)
                and (b - a) % step == timedelta(0)
            )
        assert len(p.minutes) <= 2 and len(p.hours) <= 2 and len(p.days) <= 1


async def test_rollups_equal_the_sum_of_their_minutes(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = await metered(platform, monkeypatch, seed=1)
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        minutes = (await s.execute(select(UsageMinute).where(UsageMinute.service_id == sid))).scalars().all()
        errors = (await s.execute(select(UsageError).where(UsageError.service_id == sid))).scalars().all()
        rollups = (await s.execute(select(UsageRollup).where(UsageRollup.service_id == sid))).scalars().all()
        erollups = (
            (await s.execute(select(UsageErrorRollup).where(UsageErrorRollup.service_id == sid)))
            .scalars()
            .all()
        )
    want: dict[tuple[Any, ...], Counter[str]] = defaultdict(Counter)
    for m in minutes:
        for span in ("h", "d"):
            want[(span, bucket(m.minute, span), m.host)].update({c: getattr(m, c) for c in COUNTERS})
    got = {(r.span, r.bucket, r.host): Counter({c: getattr(r, c) for c in COUNTERS}) for r in rollups}
    assert {k: +v for k, v in got.items()} == {k: +v for k, v in want.items()}
    assert len(got) == len(want) and sum(r.span == "d" for r in rollups) >= 4
    ewant: Counter[tuple[Any, ...]] = Counter()
    for e in errors:
        for span in ("h", "d"):
            ewant[(span, bucket(e.minute, span), e.category)] += e.count
    assert {(r.span, r.bucket, r.category): r.count for r in erollups} == dict(ewant)


async def test_two_nodes_in_one_minute_add_up(platform: Platform) -> None:
    sid = str(uuid.uuid4())
    minute = BASE + timedelta(hours=5, minutes=17)
    a = UsageRow(
        sid, minute, "x.example", requests=3, connections=1, bytes_up=10, bytes_down=20, errors={"auth": 2}
    )
    b = UsageRow(
        sid, minute, "x.example", requests=4, connections=2, bytes_up=1, bytes_down=2, errors={"auth": 5}
    )
    await write_usage(platform.db, [a])
    await write_usage(platform.db, [b])
    async with platform.db.unit_of_work(write=False) as uow:
        t = await usage.totals(uow.session, uuid.UUID(sid), BASE, BASE + DAY)
        rollups = (
            await uow.session.execute(
                select(UsageRollup.span, UsageRollup.requests).where(UsageRollup.service_id == uuid.UUID(sid))
            )
        ).all()
    assert as_tuple(t) == (7, 3, 11, 22, 7) and t.errors_by_category == {"auth": 7}
    assert sorted(rollups) == [("d", 7), ("h", 7)]


async def test_windows_across_boundaries_equal_the_minutes(
    platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = await metered(platform, monkeypatch, seed=2)
    rng = random.Random(3)
    windows = [
        (BASE, BASE + 3 * DAY),
        (BASE + timedelta(minutes=59, seconds=30), BASE + 2 * DAY + timedelta(hours=1, seconds=1)),
        (BASE + HOUR, BASE + 3 * HOUR),
        (BASE + timedelta(hours=3), BASE + timedelta(days=1, hours=3)),  # exactly midnight to midnight +
    ]
    for _ in range(25):
        start = BASE + timedelta(seconds=rng.randrange(3 * 86400))
        windows.append((start, start + timedelta(seconds=rng.randrange(1, 2 * 86400))))
    async with platform.db.unit_of_work(write=False) as uow:
        for start, end in windows:
            ref = await reference(platform, sid, start, end)
            t = await usage.totals(uow.session, sid, start, end)
            assert as_tuple(t) == ref["total"], (start, end)
            assert t.errors_by_category == ref["errors"], (start, end)
            top = await usage.top_destinations(uow.session, sid, start, end, 100)
            assert {h: as_tuple(v) for h, v in top} == ref["hosts"], (start, end)
            series = await usage.series(uow.session, sid, start, end)
            assert tuple(map(sum, zip(*(as_tuple(v) for _, v in series), strict=True))) in (ref["total"], ())


async def test_export_reconciles_with_the_totals(platform: Platform, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = await metered(platform, monkeypatch, seed=4)
    start, end = (
        BASE + timedelta(hours=2, minutes=31, seconds=5),
        BASE + timedelta(days=2, hours=7, minutes=3),
    )
    async with platform.db.unit_of_work(write=False) as uow:
        text, n = await usage.export_csv(uow.session, sid, start, end)
        t = await usage.totals(uow.session, sid, start, end)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == n > 100
    assert tuple(sum(int(r[c]) for r in rows) for c in COUNTERS) == as_tuple(t)
    assert t.errors == sum(t.errors_by_category.values())


@pytest.mark.parametrize("resolution", ["hour", "day"])
async def test_series_per_hour_or_day_equals_the_minutes(
    platform: Platform, monkeypatch: pytest.MonkeyPatch, resolution: str
) -> None:
    sid = await metered(platform, monkeypatch, seed=6)
    step = HOUR if resolution == "hour" else DAY
    start, end = (
        BASE + timedelta(hours=1, minutes=13, seconds=20),
        BASE + timedelta(days=2, hours=4, minutes=2),
    )
    async with platform.db.unit_of_work(write=False) as uow:
        coarse = await usage.series(uow.session, sid, start, end, resolution)
        fine = await usage.series(uow.session, sid, start, end)
        total = await usage.totals(uow.session, sid, start, end)
    want: dict[datetime, Counter[str]] = defaultdict(Counter)
    for minute, t in fine:
        at = bucket(minute, resolution[0])
        want[at].update(dict(zip(COUNTERS, as_tuple(t), strict=True)))
    assert [at for at, _ in coarse] == sorted(want) and len(coarse) > (2 if step == DAY else 24)
    for at, t in coarse:
        assert as_tuple(t) == tuple(want[at][c] for c in COUNTERS), at
    assert tuple(map(sum, zip(*(as_tuple(t) for _, t in coarse), strict=True))) == as_tuple(total)
