"""Bulk stock import: set-based (statements bounded by chunks, not by IPs or stock), duplicates skipped,
retired unheld IPs reactivated, held ones left alone."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, insert, select, text, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import bulk
from proxyplane.platform import Platform
from proxyplane.storage.models import StockIp

pytestmark = pytest.mark.anyio

_used: set[int] = set()


def free_block(size_bits: int = 10) -> tuple[int, str]:
    """A /(32 - size_bits) in 127.160.0.0/11 not used by this test session yet: (first address, CIDR)."""
    while True:
        n = (127 << 24) | (160 << 16) | random.randrange(1 << (21 - size_bits)) << size_bits
        if n not in _used:
            _used.add(n)
            return n, f"{bulk.dotted(n)}/{32 - size_bits}"


@contextmanager
def counted(platform: Platform) -> Iterator[list[str]]:
    statements: list[str] = []

    def listen(_c: Any, _cur: Any, sql: str, *_: Any) -> None:
        if not sql.startswith("BEGIN"):  # SQLite's BEGIN IMMEDIATE of the unit of work
            statements.append(sql)

    engine = platform.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", listen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", listen)


async def run(platform: Platform, pool: str, rows: Any, **kw: Any) -> bulk.ImportResult:
    async with platform.db.unit_of_work() as uow:
        result = await bulk.import_rows(uow.session, pool, rows, **kw)
        await uow.commit()
    return result


async def live(platform: Platform, first: int, last: int) -> list[StockIp]:
    wanted = [bulk.dotted(n) for n in range(first, last + 1)]
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(select(StockIp).where(StockIp.address.in_(wanted)))
        return list(rows.scalars())


@pytest.fixture
async def blocks(platform: Platform) -> AsyncIterator[list[str]]:
    """Addresses the test imported, retired afterwards so other tests never sell them."""
    used: list[str] = []
    yield used
    async with platform.db.unit_of_work() as uow:
        for i in range(0, len(used), 500):
            await uow.session.execute(
                update(StockIp)
                .where(StockIp.address.in_(used[i : i + 500]), StockIp.retired_at.is_(None))
                .values(retired_at=utcnow())
            )
        await uow.commit()


async def test_statements_do_not_grow_with_the_range(
    platform: Platform, blocks: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, small_cidr = free_block(8)
    _, large_cidr = free_block(12)
    counts = []
    for cidr in (small_cidr, large_cidr):
        lo, hi = bulk.range_bounds(cidr)
        blocks.extend(bulk.dotted(n) for n in range(lo, hi + 1))
        with counted(platform) as statements:
            result = await run(platform, "proxy_datacenter", bulk.range_rows(lo, hi, "LU", "CH"))
        assert (result.added, result.skipped) == (hi - lo + 1, 0)
        counts.append(len(statements))
    assert counts[0] == counts[1]  # 254 and 4094 IPs: one chunk each, the same statements

    monkeypatch.setattr(bulk, "CHUNK", 500)
    lo, hi = bulk.range_bounds(large_cidr)
    with counted(platform) as statements:
        again = await run(platform, "proxy_datacenter", bulk.range_rows(lo, hi, "LU", "CH"))
    chunks = -(-(hi - lo + 1) // 500)
    assert (again.added, again.skipped) == (0, hi - lo + 1)
    if platform.db.engine.dialect.name == "postgresql":  # per chunk: the direct COPY tried and rolled back
        expected = 3 + (3 + 4) * chunks
    else:  # the change-log trigger paused and re-created (bulk.py); the free-count one too, + its counts
        expected = 3 + 4 * chunks + 3 + 5
    assert len(statements) <= again.statements == expected
    rows = await live(platform, lo, lo + 3)
    assert {(r.product_kind, r.country_maxmind, r.country_ripe, r.capacity) for r in rows} == {
        ("proxy_datacenter", "LU", "CH", 5)
    }


async def test_duplicates_skipped_and_retired_reactivated(platform: Platform, blocks: list[str]) -> None:
    first, cidr = free_block(6)  # 62 hosts: first+1 .. first+62
    lo, hi = bulk.range_bounds(cidr)
    blocks.extend(bulk.dotted(n) for n in range(lo, hi + 1))
    result = await run(platform, "proxy_isp", bulk.range_rows(lo, lo + 9, "LU", "LU"))
    assert (result.added, result.skipped) == (10, 0)

    # retire lo..lo+4; lo+4 is still held by a service, so it is not reactivated
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockIp)
            .where(StockIp.address.in_([bulk.dotted(n) for n in range(lo, lo + 5)]))
            .values(retired_at=utcnow())
        )
        await uow.session.execute(
            update(StockIp).where(StockIp.address == bulk.dotted(lo + 4)).values(assigned_count=1)
        )
        await uow.commit()

    # a file: the whole block, lo+20 twice, in another pool with its own capacity and port
    lines = [f"{bulk.dotted(n)} lu ch" for n in range(lo, hi + 1)] + [f"{bulk.dotted(lo + 20)},LU # again"]
    rows = list(bulk.file_rows(["# header", *lines, ""]))
    result = await run(platform, "proxy_datacenter", rows, capacity=2, port=8080)
    # added: 4 reactivated + 52 new; skipped: 5 live + 1 held + 1 repeated in the file
    assert (result.added, result.skipped) == (4 + 52, 5 + 1 + 1)

    by_address = {r.address: r for r in await live(platform, lo, hi)}
    assert len(by_address) == hi - lo + 1
    back = by_address[bulk.dotted(lo)]
    assert back.retired_at is None and (back.product_kind, back.capacity, back.port) == (
        "proxy_datacenter",
        2,
        8080,
    )
    assert back.country_ripe == "CH"
    held = by_address[bulk.dotted(lo + 4)]
    assert held.retired_at is not None and held.product_kind == "proxy_isp"
    kept = by_address[bulk.dotted(lo + 7)]
    assert kept.retired_at is None and kept.product_kind == "proxy_isp" and kept.capacity == 3
    new = by_address[bulk.dotted(lo + 30)]
    assert (new.product_kind, new.capacity, new.port, new.country_maxmind) == (
        "proxy_datacenter",
        2,
        8080,
        "LU",
    )


async def test_dedicated_capacity_and_bad_input(platform: Platform, blocks: list[str]) -> None:
    first, cidr = free_block(3)
    lo, hi = bulk.range_bounds(cidr)
    blocks.extend(bulk.dotted(n) for n in range(lo, hi + 1))
    await run(platform, "proxy_personal", bulk.range_rows(lo, hi, "LU", "LU"), capacity=4)
    assert {r.capacity for r in await live(platform, lo, hi)} == {1}
    with pytest.raises(ValueError, match="line 2"):
        list(bulk.file_rows(["127.0.0.1 US", "127.0.0.300 US"]))
    with pytest.raises(ValueError, match="line 1"):
        list(bulk.file_rows(["127.0.0.1 XX"]))
    with pytest.raises(ValueError, match="empty range"):
        bulk.range_bounds("127.0.0.9-127.0.0.1")
    assert bulk.range_bounds("127.0.0.0/31") == ((127 << 24), (127 << 24) + 1)
    with pytest.raises(ValueError, match="capacity"):
        await run(platform, "proxy_isp", [], capacity=0)


def test_range_rows_are_the_addresses_in_order() -> None:
    for lo, hi in ((0x7F0000FE, 0x7F000102), (0x7F000000, 0x7F000000), (0x7F0001FF, 0x7F0003FF)):
        expected = [(bulk.dotted(n), "LU", "CH") for n in range(lo, hi + 1)]
        rows = bulk.range_rows(lo, hi, "lu", "ch")
        assert len(rows) == len(expected) and list(rows) == expected
        assert [r for part in rows.chunks(7) for r in part] == expected


async def test_import_logs_its_pool_once_for_gateway_nodes(platform: Platform, blocks: list[str]) -> None:
    """Nodes re-read a pool when the change log says so: an import must leave its pool's entry there
    (on SQLite the per-row log trigger is paused during the import and the pool logged once)."""
    first, cidr = free_block(7)
    lo, hi = bulk.range_bounds(cidr)
    blocks.extend(bulk.dotted(n) for n in range(lo, hi + 1))

    async def logged() -> int:
        async with platform.db.unit_of_work(write=False) as uow:
            q = text("SELECT coalesce(max(seq), 0) FROM gateway_changes WHERE key = 'pool:proxy_isp'")
            return int((await uow.session.execute(q)).scalar_one())

    before = await logged()
    await run(platform, "proxy_isp", bulk.range_rows(lo, lo + 99, "LU", "LU"))
    after = await logged()
    assert after > before
    # the trigger is back: a plain insert into the pool is logged again
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(insert(StockIp).values(
            address=bulk.dotted(lo + 100), product_kind="proxy_isp", country_maxmind="LU", country_ripe="LU",
            capacity=1, assigned_count=0))
        await uow.commit()
    assert await logged() > after
