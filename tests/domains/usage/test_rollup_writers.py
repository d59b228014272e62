"""Every writer of the minute tables keeps the hourly/daily rollups: the source holds no write of
usage_minutes / usage_errors outside `add_usage` (storage/repos/usage_minutes.py) (of subuser_usage_minutes /
subuser_usage_errors outside storage/repos/subuser_usage.py, apply_usage's statements) (and the bench
generator, which backfills the rollups set-based), and after each writer the rollup buckets and the usage
read at every resolution sum exactly to the minutes."""

from __future__ import annotations

import functools
import random
import re
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bench.platform_data import BASE as BENCH_BASE
from bench.platform_data import drop_usage, generate_usage
from sqlalchemy import select

from proxyplane.domains.usage import service as usage
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import usage_values, write_usage
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.usage_rollups import UsageErrorRollup, UsageRollup
from proxyplane.storage.repos.usage_minutes import add_usage
from proxyplane.storage.rollups import bucket

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")
WRITE = re.compile(
    r"(?<!class )\bUsage(Minute|Error)\(|\b(insert|update)\(\s*Usage(Minute|Error)\b"
    r"|upsert\([^)]*\bUsage(Minute|Error)\b|\b(insert\s+into|update)\s+usage_(minutes|errors)\b",
    re.IGNORECASE,
)
SUBUSER_WRITE = re.compile(
    r"(?<!class )\bSubuserUsage(Minute|Error)\(|\b(insert|update)\(\s*SubuserUsage(Minute|Error)\b"
    r"|_?upsert\([^)]*\bSubuserUsage(Minute|Error)\b|\b(insert\s+into|update)\s+subuser_usage_(minutes|errors)\b",
    re.IGNORECASE,
)
# the one function, and the bench generator (minutes set-based, then the migration's backfill of them)
WRITERS = {"src/proxyplane/storage/repos/usage_minutes.py", "bench/platform_data.py"}
BASE = datetime(2026, 5, 30, 22, 30, tzinfo=UTC)


TOKENS = ("usageminute", "usageerror", "usage_minutes", "usage_errors")  # every pattern names one


@functools.cache
def sources() -> list[tuple[str, str]]:
    """(path from the root, text) of every Python file a writer could hide in that names a minute table
    (one walk for both tests; the patterns are slow, the token check is not)."""
    out = []
    for top in ("src", "tests", "bench", "scripts"):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if (
                "/migrations/" in rel
                or "/node_modules/" in rel
                or rel == "tests/domains/usage/test_rollup_writers.py"
            ):
                continue
            text = path.read_text()
            lower = text.lower()
            if any(t in lower for t in TOKENS):
                out.append((rel, text))
    return out


def test_no_writer_of_the_minute_tables_but_the_one_function() -> None:
    assert {rel for rel, text in sources() if WRITE.search(text)} == WRITERS


def test_no_writer_of_the_subuser_minute_tables_but_apply_usage() -> None:
    """The same for the sub-users' minute tables and their rollups (issue 18): written by the statements
    of domains/subusers/metering.apply_usage, in storage/repos/subuser_usage.py (issue 31)."""
    found = {rel for rel, text in sources() if SUBUSER_WRITE.search(text)}
    assert found == {"src/proxyplane/storage/repos/subuser_usage.py"}


async def assert_exact(platform: Platform, sid: uuid.UUID, start: datetime, end: datetime) -> int:
    """Rollup buckets == their minutes, per host / category; series at every resolution and the totals
    == the minutes. Returns the window's requests."""
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        minutes = (await s.execute(select(UsageMinute).where(UsageMinute.service_id == sid))).scalars()
        want: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0] * len(COUNTERS))
        per_minute: dict[datetime, list[int]] = defaultdict(lambda: [0] * len(COUNTERS))
        for m in minutes:
            at = m.minute.astimezone(UTC)
            for span in ("h", "d"):
                row = want[(span, bucket(at, span), m.host)]
                for i, c in enumerate(COUNTERS):
                    row[i] += getattr(m, c)
            if start <= at < end:
                for i, c in enumerate(COUNTERS):
                    per_minute[at][i] += getattr(m, c)
        rolled = (await s.execute(select(UsageRollup).where(UsageRollup.service_id == sid))).scalars()
        got = {(r.span, r.bucket.astimezone(UTC), r.host): [getattr(r, c) for c in COUNTERS] for r in rolled}
        assert got == dict(want)
        errors = (await s.execute(select(UsageError).where(UsageError.service_id == sid))).scalars()
        want_e: dict[tuple[Any, ...], int] = defaultdict(int)
        for e in errors:
            for span in ("h", "d"):
                want_e[(span, bucket(e.minute.astimezone(UTC), span), e.category)] += e.count
        rolled_e = await s.execute(select(UsageErrorRollup).where(UsageErrorRollup.service_id == sid))
        assert {(r.span, r.bucket.astimezone(UTC), r.category): r.count for r in rolled_e.scalars()} == dict(
            want_e
        )
        total = [sum(v[i] for v in per_minute.values()) for i in range(len(COUNTERS))]
        t = await usage.totals(s, sid, start, end)
        assert [t.requests, t.connections, t.bytes_up, t.bytes_down, t.errors] == total
        for resolution in ("minute", "hour", "day"):
            points = await usage.series(s, sid, start, end, resolution)
            sums = [sum(getattr(p, c) for _, p in points) for c in COUNTERS]
            assert sums == total, resolution
            if resolution == "minute":
                assert {at: [getattr(p, c) for c in COUNTERS] for at, p in points} == dict(per_minute)
    return total[0]


def rows(sid: str, seed: int) -> list[UsageRow]:
    rng = random.Random(seed)
    return [
        UsageRow(
            sid,
            BASE + timedelta(minutes=rng.randrange(3 * 1440)),
            rng.choice(("a.example", "b.example")),
            requests=rng.randrange(1, 40),
            connections=rng.randrange(3),
            bytes_up=rng.randrange(5000),
            bytes_down=rng.randrange(50_000),
            errors={"upstream": 1} if rng.random() < 0.3 else {},
        )
        for _ in range(300)
    ]


async def test_usage_sink_keeps_the_rollups(platform: Platform) -> None:
    sid = uuid.uuid4()
    written = rows(str(sid), 1)
    await write_usage(platform.db, written[:170])
    await write_usage(platform.db, written[120:])  # overlapping flushes (two nodes) add up
    start, end = BASE + timedelta(minutes=17), BASE + timedelta(days=2, hours=5, minutes=3)
    assert await assert_exact(platform, sid, start, end) > 0


async def test_add_usage_in_a_caller_transaction_keeps_the_rollups(platform: Platform) -> None:
    """The path test data and admin tools take (legacy tests write minutes this way)."""
    sid = uuid.uuid4()
    minutes, errors = usage_values(rows(str(sid), 2))
    async with platform.db.unit_of_work() as uow:
        await add_usage(uow.session, minutes, errors)
        await add_usage(uow.session, minutes[:50], errors[:5])
        await uow.commit()
    assert await assert_exact(platform, sid, BASE, BASE + timedelta(days=3, minutes=1)) > 0


async def test_bench_generator_keeps_the_rollups(platform: Platform) -> None:
    dense, every = await generate_usage(platform.db, {"dense": 1, "sparse": 1, "days": 2})
    try:
        start, end = BENCH_BASE + timedelta(minutes=45), BENCH_BASE + timedelta(days=1, hours=20)
        for sid in every:
            await assert_exact(platform, sid, start, end)
    finally:
        await drop_usage(platform.db, every)
