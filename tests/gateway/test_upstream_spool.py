"""The upstream suppliers' counts (issue 36.4, the cost side of the margin report) go through the usage
spool like the customers' usage: on disk first, applied once however often a batch is sent, kept while
the store does not answer and replayed when it does; the margin report prices what was applied. A batch
naming an upstream that is no longer in the store still applies (its rows dropped), so the customers'
usage in it is never stuck behind it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import delete, func, select

from proxyplane.gateway.metering import Meter
from proxyplane.gateway.usage_sink import write_batches
from proxyplane.gateway.usage_spool import UsageSpool
from proxyplane.platform import Platform
from proxyplane.storage.models.upstreams import Upstream, UpstreamUsage
from tests.domains.operators.helpers import run
from tests.domains.upstreams.suppliers import free_tcp_port
from tests.support import Account

from .processes import usage
from .test_usage_spool import _service, _unreachable

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _supplier(platform: Platform, cost_per_gb_cents: int) -> tuple[str, str]:
    pool = f"p{uuid.uuid4().hex[:10]}"
    made = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1",
                     port=free_tcp_port(), username="acct", password="pw",
                     cost_per_gb_cents=cost_per_gb_cents)
    return pool, made["upstream_id"]


async def _stored(platform: Platform, upstream_id: str) -> tuple[int, int, int, int]:
    c = UpstreamUsage
    query = select(func.sum(c.bytes_up), func.sum(c.bytes_down), func.sum(c.tunnels), func.sum(c.failures))
    async with platform.db.unit_of_work() as uow:
        row = (await uow.session.execute(query.where(c.upstream_id == uuid.UUID(upstream_id)))).one()
    return tuple(int(v or 0) for v in row)  # type: ignore[return-value]


async def _drop(platform: Platform, pool: str) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
        await uow.commit()


def _meter(service_id: str, upstream_id: str, nbytes: int) -> Meter:
    meter = Meter()
    meter.record(service_id, "example.org", connections=1, bytes_up=nbytes, bytes_down=2 * nbytes)
    meter.supplier(upstream_id, up=nbytes, down=2 * nbytes, tunnels=1)
    meter.supplier(upstream_id, failed=2)
    return meter


async def test_a_suppliers_count_is_spooled_and_applied_once(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    sid = await _service(client, platform, account)
    pool, upstream_id = await _supplier(platform, 1_000_000)  # $10 000 per GB: 1 000 bytes = 1 cent
    before = await usage(platform, sid)
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    assert await _meter(sid, upstream_id, 1_500).flush(spool) == 2  # the service's row and the supplier's
    (batch,) = list(spool.directory.glob("*.usage"))
    copy = tmp_path / "copy"
    shutil.copy(batch, copy)
    assert await spool.drain() == 1
    shutil.copy(copy, batch)  # sent again (a lost acknowledgement): the store takes nothing twice
    assert await spool.drain() == 1
    assert await _stored(platform, upstream_id) == (1_500, 3_000, 1, 2)
    after = await usage(platform, sid)
    assert (after[0] - before[0], after[1] - before[1]) == (1_500, 3_000)  # not the supplier's bytes too
    report = await run(platform, "operator_upstream_margin", days=1, pool=pool)
    [sup] = report["pools"][0]["upstreams"]
    assert (sup["bytes"], sup["tunnels"], sup["failures"], sup["cost_cents"]) == (4_500, 1, 2, 5)
    await _drop(platform, pool)


async def test_store_down_keeps_the_suppliers_count_then_replays_it(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    sid = await _service(client, platform, account)
    pool, upstream_id = await _supplier(platform, 0)
    down = _unreachable()
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(down, b), max_bytes=1 << 20)
    try:
        for _ in range(2):
            await _meter(sid, upstream_id, 100).flush(spool)
            with pytest.raises(OSError):
                await spool.drain()
        assert spool.files == 2
    finally:
        await down.dispose()
    assert await _stored(platform, upstream_id) == (0, 0, 0, 0)
    back = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    assert await back.drain() == 2
    assert await _stored(platform, upstream_id) == (200, 400, 2, 4)
    await _drop(platform, pool)


async def test_a_batch_naming_a_deleted_upstream_still_applies_the_services_usage(
    client: httpx.AsyncClient, platform: Platform, account: Account, tmp_path: Path
) -> None:
    sid = await _service(client, platform, account)
    pool, upstream_id = await _supplier(platform, 0)
    await _drop(platform, pool)
    before = await usage(platform, sid)
    spool = UsageSpool(tmp_path, 0, lambda b: write_batches(platform.db, b), max_bytes=1 << 20)
    await _meter(sid, upstream_id, 7).flush(spool)
    assert await spool.drain() == 1 and spool.files == 0
    after = await usage(platform, sid)
    assert (after[0] - before[0], after[1] - before[1]) == (7, 14)
    assert await _stored(platform, upstream_id) == (0, 0, 0, 0)
