"""The usage spool (issue 35): batches on disk before the store, applied exactly once, kept through a
store that does not answer (a real connection refused: a database URL whose port nothing listens on) and
replayed when it does."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from proxyplane.gateway.metering import Meter, UsageRow
from proxyplane.gateway.usage_sink import write_batches
from proxyplane.gateway.usage_spool import SpoolFull, UsageSpool, decode, encode
from proxyplane.platform import Platform
from proxyplane.storage.engine import Database
from tests.observability.support import static_service
from tests.support import Account

from .conftest import free_port
from .processes import usage

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _rows(sid: str, up: int, down: int) -> list[UsageRow]:
    minute = datetime.fromtimestamp(int(datetime.now(UTC).timestamp()) // 60 * 60, UTC)
    row = UsageRow(sid, minute, "example.org", requests=1, connections=1, bytes_up=up, bytes_down=down)
    row.errors = {"upstream_refused": 1}
    row.exit_errors = {("127.0.1.9", "upstream_refused"): 1}
    return [row]


def _unreachable() -> Database:
    """A store that refuses every connection (nothing listens on the port)."""
    return Database(f"postgresql+asyncpg://postgres@127.0.0.1:{free_port(['127.0.0.1'])}/none")


async def _service(client: httpx.AsyncClient, platform: Platform, account: Account) -> str:
    return (await static_service(client, platform, account)).service_id


def test_encode_round_trip() -> None:
    rows = _rows(str(uuid.uuid4()), 3, 4)
    back = decode(encode(rows))
    assert back == rows


async def test_batch_applied_once_even_when_sent_twice(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    sid = await _service(client, platform, account)
    before = await usage(platform, sid)
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    await spool(_rows(sid, 100, 200))
    (batch,) = list(spool.directory.glob("*.usage"))
    copy = tmp_path / "copy"
    shutil.copy(batch, copy)
    assert await spool.drain() == 1
    assert not list(spool.directory.glob("*.usage"))
    shutil.copy(copy, batch)  # the same batch again: a lost acknowledgement, a crash before the unlink
    assert await spool.drain() == 1  # sent, and the store took nothing
    after = await usage(platform, sid)
    assert (after[0] - before[0], after[1] - before[1]) == (100, 200)


async def test_store_down_keeps_the_spool_and_replays_it(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    sid = await _service(client, platform, account)
    before = await usage(platform, sid)
    down = _unreachable()
    meter = Meter()
    marked: list[UsageRow] = []
    spool = UsageSpool(
        tmp_path, 0, lambda b: write_batches(down, b), max_bytes=1 << 20, on_applied=marked.extend
    )
    try:
        for _ in range(3):
            meter.record(sid, "example.org", requests=1, bytes_up=10, bytes_down=20)
            assert await meter.flush(spool) == 1  # to disk, whatever the store does
            with pytest.raises(OSError):
                await spool.drain()
        assert spool.store_error is not None and spool.files == 3 and spool.bytes > 0
        assert marked == []  # not in the store: not flushed for the limits either
    finally:
        await down.dispose()
    # the store is back (the node restarts on it): a new spool on the same directory replays all
    back = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    assert back.files == 3
    assert await back.drain() == 3
    assert back.store_error is None and back.files == 0
    after = await usage(platform, sid)
    assert (after[0] - before[0], after[1] - before[1]) == (30, 60)
    # the first spool's own files are gone: its next drain sends nothing, marks nothing
    spool.write = lambda b: write_batches(platform.db, b)
    assert await spool.drain() == 0 and marked == []


async def test_own_batches_marked_flushed_once_applied(platform: Platform, tmp_path: Path) -> None:
    sub = f"{uuid.uuid4()}/7"
    meter = Meter()
    meter.record(sub, "h", requests=1, bytes_up=5, bytes_down=5)
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    spool.on_applied = meter.mark_flushed
    await meter.flush(spool)
    assert meter.sub_counts[sub] == [10, 1, 0, 0]  # spooled, not yet in the store
    await spool.drain()
    assert meter.sub_counts[sub] == [10, 1, 10, 1]


async def test_full_spool_keeps_rows_in_the_meter(tmp_path: Path, platform: Platform) -> None:
    meter = Meter()
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1)
    sid = str(uuid.uuid4())
    meter.record(sid, "h", bytes_up=1)
    await meter.flush(spool)  # the first batch fits (the bound is checked before a write)
    meter.record(sid, "h", bytes_up=2)
    with pytest.raises(SpoolFull):
        await meter.flush(spool)
    assert [r.bytes_up for r in meter.drain()] == [2]  # restored, nothing lost


async def test_flush_cancelled_mid_write_counts_its_rows_once(tmp_path: Path, platform: Platform) -> None:
    """A shutdown cancels the meter's task while a batch is being written (the spool's thread goes on
    and renames the file): the rows are not restored for the final flush as well, never counted twice."""
    meter = Meter()
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    sid = str(uuid.uuid4())
    meter.record(sid, "h", bytes_up=5, error="subuser_disabled")
    flushing = asyncio.ensure_future(meter.flush(spool))
    await asyncio.sleep(0)  # drained, the spool's thread writing the batch
    flushing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(flushing, 15)
    await meter.flush(spool)  # the final flush (Meter.run's finally)
    spooled = [row for path in spool.directory.glob("*.usage") for row in decode(path.read_bytes())]
    assert [(r.bytes_up, r.errors) for r in spooled] == [(5, {"subuser_disabled": 1})]
    assert meter.drain() == []


async def test_worker_zero_replays_an_orphaned_worker_directory(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    import os

    sid = await _service(client, platform, account)
    before = await usage(platform, sid)
    gone = UsageSpool(tmp_path, 3, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    await gone(_rows(sid, 7, 8))
    (orphan,) = list(gone.directory.glob("*.usage"))
    zero = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    assert await zero.drain() == 0  # young: its worker may still be running
    os.utime(orphan, (1, 1))
    assert await zero.drain() == 1
    after = await usage(platform, sid)
    assert (after[0] - before[0], after[1] - before[1]) == (7, 8)
