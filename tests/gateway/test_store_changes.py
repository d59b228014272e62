"""The gateway change log (issue 14 point 4): a node reads gateway_changes by seq, re-reads only the
changed services, is woken by NOTIFY on PostgreSQL, reloads everything when too far behind, never misses
a transaction that commits after a later one (PostgreSQL), and still switches a service off at its term
end. Statement counts come from a SQLAlchemy event listener on the node's engine."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from bench.scale.generate import generate
from sqlalchemy import event, func, select, update

from proxyplane.core.clock import utcnow
from proxyplane.gateway.access import ServiceEntry
from proxyplane.gateway.store import StoreSync
from proxyplane.jobs.change_notifier import notifier_task
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from tests.domains.stock.support import fresh_stock
from tests.support import bearer

from .test_store_static import API, buy, eventually

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Statements:
    """Counts the SQL statements sent on an engine while ``counting``."""

    def __init__(self, platform: Platform) -> None:
        self.engine = platform.db.engine.sync_engine
        self.n = 0
        self.on = False
        event.listen(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, *_args: Any) -> None:
        if self.on:
            self.n += 1

    @contextlib.contextmanager
    def counting(self):
        self.n, self.on = 0, True
        try:
            yield self
        finally:
            self.on = False

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._seen)


@pytest.fixture
def statements(platform: Platform):
    s = Statements(platform)
    yield s
    s.close()


class Applied:
    """Records the upserts and removals a StoreSync hands its table."""

    def __init__(self, sync: StoreSync) -> None:
        self.upserted: list[str] = []
        original = sync.table.apply

        def apply(upserts: Any, removals: Any) -> None:
            upserts, removals = list(upserts), list(removals)
            self.upserted += [e.service_id for e in upserts]
            original(upserts, removals)

        sync.table.apply = apply  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def store_sync(platform: Platform, **kwargs: Any) -> AsyncIterator[StoreSync]:
    sync = StoreSync(platform.db, platform.secrets, **{"listen": False, **kwargs})
    await sync.full_reload()
    try:
        yield sync
    finally:
        await sync.close()


async def generated(platform: Platform, services: int, ips: int) -> list[uuid.UUID]:
    """``services`` new services (bench generator) and their ids."""
    tag = uuid.uuid4().hex[:8]
    await generate(platform.db.url, services, ips, tag=tag, term_days=3650)
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(Service.service_id).where(Service.login.like(f"s{tag}%")).order_by(Service.number)
        )
        return list(rows.scalars())


async def set_max_connections(platform: Platform, ids: list[uuid.UUID], value: int) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Service).where(Service.service_id.in_(ids)).values(max_connections=value)
        )
        await uow.commit()


async def idle_poll_statements(sync: StoreSync, statements: Statements) -> int:
    """The statements of an idle poll: the fewest of 5 polls (a poll that re-reads a sequence gap left by
    another process's transaction on a shared test database costs one more, once)."""
    await sync.poll()  # anything pending
    counts = []
    for _ in range(5):
        with statements.counting():
            await sync.poll()
        counts.append(statements.n)
    return min(counts)


async def test_poll_reads_the_log_by_seq_and_only_changed_services(platform, statements) -> None:
    first = await generated(platform, 50, 120)
    async with store_sync(platform) as sync:
        applied = Applied(sync)
        small = len(sync.table)
        before = await idle_poll_statements(sync, statements)
        more = await generated(platform, 1_500, 3_000)
        await sync.poll()
        assert len(sync.table) == small + 1_500
        assert {str(s) for s in more} <= set(applied.upserted)
        after = await idle_poll_statements(sync, statements)
        # an idle poll: the log read (+ BEGIN on SQLite), whatever the number of services
        assert before == after <= 2
        # one service changed by plain SQL: only that service is re-read and applied
        applied.upserted.clear()
        await set_max_connections(platform, [first[7]], 7)
        with statements.counting():
            await sync.poll()
        assert applied.upserted == [str(first[7])]
        entry = sync.table.get(str(first[7]))
        assert entry is not None and entry.max_connections == 7  # (no add-on on this one)
        # log read + IPs + whitelist + add-ons + sub-users + service row (+ BEGIN): not a function of the
        # table size
        assert statements.n <= 7


async def test_writer_through_the_app_reaches_a_running_node(client, platform, account) -> None:
    await fresh_stock(platform, "proxy_personal", "US", 1)
    svc = await buy(client, platform, account, "Dedicated IP", parameters={})
    sid, key = svc["service_id"], svc["key"]
    sync = StoreSync(platform.db, platform.secrets, poll_interval=0.1)  # LISTEN too on PostgreSQL
    await sync.start()
    try:
        assert sync.table.get(sid) is not None
        r = await client.post(f"{API}/{sid}/proxy/whitelist", json={"ip": "127.0.0.78"}, headers=bearer(key))
        assert r.status_code in (200, 201), r.text

        async def whitelisted() -> bool:
            entry = sync.table.get(sid)
            return entry is not None and "127.0.0.78" in entry.whitelist

        assert await eventually(whitelisted, within=1.0) < 1.0
        # cancelling removes it from the table (a cancelled service is not loaded)
        assert (await client.post(f"{API}/{sid}/cancel", headers=bearer(key))).status_code == 200

        async def gone() -> bool:
            return sync.table.get(sid) is None

        await eventually(gone, within=1.0)
    finally:
        await sync.close()


async def test_notify_wakes_a_postgresql_node(platform) -> None:
    [sid] = await generated(platform, 1, 1)
    postgres = not platform.db.is_sqlite
    # PostgreSQL: no poll for 30 s, the change notifier's NOTIFY alone must wake it (the trigger functions
    # no longer notify: migration 0020i); SQLite: the poll is the mechanism
    sync = StoreSync(platform.db, platform.secrets, poll_interval=30.0 if postgres else 0.1)
    async with notifier_task(platform.db) as notifier:
        if postgres:
            await asyncio.wait_for(notifier.ready.wait(), 2)
        await _woken(platform, sync, sid, postgres)


async def _woken(platform: Platform, sync: StoreSync, sid: uuid.UUID, postgres: bool) -> None:
    await sync.start()
    try:
        assert (sync.listener is not None and sync.listener.connected) is postgres
        await asyncio.sleep(0.2)
        started = asyncio.get_running_loop().time()
        await set_max_connections(platform, [sid], 3)

        async def applied() -> bool:
            entry = sync.table.get(str(sid))
            return entry is not None and entry.max_connections == 3

        await eventually(applied, within=5.0)
        # PostgreSQL: the node polls every 30 s here, so being applied at all within 5 s means the notifier
        # woke it (typically 50-100 ms: notifier tick + a re-read; bench/notify_commits.py measures it)
        assert asyncio.get_running_loop().time() - started < 5.0
    finally:
        await sync.close()
    assert sync.listener is None or not sync.listener.connected


async def test_a_node_far_behind_reloads_everything(platform) -> None:
    ids = await generated(platform, 6, 6)
    async with store_sync(platform, max_incremental=3) as sync:
        reloads = sync.full_reloads
        await set_max_connections(platform, ids, 9)
        await sync.poll()
        assert sync.full_reloads == reloads + 1
        # (the generator gives every 20th service, from the 4th, an extra-connections add-on of 50)
        got = [sync.table.get(str(s)).max_connections for s in ids]  # type: ignore[union-attr]
        assert got == [9, 9, 9, 59, 9, 9]
        await set_max_connections(platform, ids[:2], 8)
        await sync.poll()  # two changes: incremental again
        assert sync.full_reloads == reloads + 1
        assert sync.table.get(str(ids[0])).max_connections == 8  # type: ignore[union-attr]


async def test_a_transaction_committing_after_a_later_one_is_not_missed(platform) -> None:
    x, y = await generated(platform, 2, 2)
    async with store_sync(platform) as sync:
        if platform.db.is_sqlite:  # one writer at a time: commits come in seq order
            await set_max_connections(platform, [x], 11)
            await set_max_connections(platform, [y], 12)
        else:
            async with platform.db.unit_of_work() as slow:
                await slow.session.execute(
                    update(Service).where(Service.service_id == x).values(max_connections=11)
                )  # seq taken now, committed after y's
                await set_max_connections(platform, [y], 12)
                await sync.poll()
                assert sync.table.get(str(y)).max_connections == 12  # type: ignore[union-attr]
                assert sync.table.get(str(x)).max_connections == 100  # type: ignore[union-attr]
                assert sync.feed.holes  # the gap is remembered
                await slow.commit()
        await sync.poll()
        await sync.poll()
        assert sync.table.get(str(x)).max_connections == 11  # type: ignore[union-attr]
        assert sync.table.get(str(y)).max_connections == 12  # type: ignore[union-attr]
        assert not sync.feed.holes


async def test_a_full_load_catches_up_only_the_transactions_open_during_it(platform) -> None:
    """A transaction still open at a full load, whose change has a lower seq than the load's mark, is read
    once it commits; the keys of a transaction that committed BEFORE the load are not read again, even
    while an older transaction (`old`) was open (they were once, and then pushed a node with a small
    max_incremental into a second full reload)."""
    if platform.db.is_sqlite:
        pytest.skip("SQLite commits in seq order: nothing is open at a load")
    late, a, b = await generated(platform, 3, 3)
    async with platform.db.unit_of_work() as old, platform.db.unit_of_work() as open_:
        await old.session.execute(select(func.pg_current_xact_id()))  # an xid, nothing written
        await open_.session.execute(
            update(Service).where(Service.service_id == late).values(max_connections=5)
        )  # its seq is taken now, below the next one
        await set_max_connections(platform, [a, b], 7)  # committed before the load
        async with store_sync(platform, max_incremental=1) as sync:
            reloads = sync.full_reloads
            assert sync.table.get(str(late)).max_connections == 100  # type: ignore[union-attr]
            await open_.commit()
            await old.rollback()
            await eventually(lambda: _poll_until(sync, late, 5))
            assert sync.full_reloads == reloads
            assert [sync.table.get(str(s)).max_connections for s in (a, b)] == [7, 7]  # type: ignore[union-attr]


async def _poll_until(sync: StoreSync, sid: uuid.UUID, max_connections: int) -> bool:
    await sync.poll()
    return sync.table.get(str(sid)).max_connections == max_connections  # type: ignore[union-attr]


async def test_term_end_switches_the_service_off_without_a_change(platform, statements) -> None:
    [sid] = await generated(platform, 1, 1)
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Service)
            .where(Service.service_id == sid)
            .values(current_period_end=utcnow() + timedelta(seconds=4))  # room for a loaded machine
        )
        await uow.commit()
    end = time.monotonic() + 4
    async with store_sync(platform) as sync:
        await sync.poll()
        entry: ServiceEntry | None = sync.table.get(str(sid))
        assert entry is not None and entry.active
        await asyncio.sleep(max(0.0, end - time.monotonic()) + 0.2)
        reloads = sync.full_reloads
        await sync.poll()
        entry = sync.table.get(str(sid))
        assert entry is not None and not entry.active  # known, refused as inactive
        assert sync.full_reloads == reloads


async def test_stock_change_refreshes_a_rotating_pool_in_place(platform, statements) -> None:
    from proxyplane.storage.models import StockIp
    from tests.domains.stock.support import unique_loopback

    [rotating, *_] = await generated(platform, 50, 60)  # the first 2 % are rotating (pool proxy_datacenter)
    address = unique_loopback()
    async with store_sync(platform) as sync:
        entry = sync.table.get(str(rotating))
        assert entry is not None and entry.kind == "rotating" and address not in entry.exit_ips
        async with platform.db.unit_of_work() as uow:
            uow.session.add(
                StockIp(
                    address=address, product_kind="proxy_datacenter", country_maxmind="US", country_ripe="DE"
                )
            )
            await uow.commit()
        await sync.poll()
        assert sync.table.get(str(rotating)) is entry and entry.exit_ips.get(address) == "us"  # same entry
        # an order bumping assigned_count is not a pool change: nothing is re-read
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(StockIp)
                .where(StockIp.address == address)
                .values(assigned_count=StockIp.assigned_count + 1)
            )
            await uow.commit()
        with statements.counting():
            await sync.poll()
        assert statements.n == await idle_poll_statements(sync, statements)  # the log read alone
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(StockIp).where(StockIp.address == address).values(retired_at=utcnow())
            )
            await uow.commit()
        await sync.poll()
        assert address not in entry.exit_ips


async def test_full_reload_backstop_is_a_setting(platform, monkeypatch) -> None:
    async with store_sync(platform) as sync:
        assert sync.full_reload_interval == 3600.0  # the default: rare (it is O(everything) per node)
    monkeypatch.setenv("PROXYPLANE_GATEWAY_FULL_RELOAD_SECONDS", "0")
    async with store_sync(platform) as sync:
        reloads = sync.full_reloads
        await sync.poll()
        assert sync.full_reloads == reloads + 1
