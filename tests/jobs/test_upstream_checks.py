"""The job worker's upstream health checks (issue 36.4): a pass checks every active supplier (a live
pproxy up, a closed port down, an inactive one left alone) and stores the results; an interval of 0 runs
nothing."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import delete

from proxyplane.jobs.upstream_checks import check_all, checks_task, run_checks
from proxyplane.platform import Platform
from proxyplane.storage.models.upstreams import Upstream
from tests.domains.operators.helpers import run
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy

pytestmark = pytest.mark.anyio


async def test_a_pass_checks_the_active_suppliers_and_stores_the_results(platform: Platform) -> None:
    pool = f"j{uuid.uuid4().hex[:10]}"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    target = await asyncio.start_server(answer, "127.0.0.1", 0)
    check_target = f"127.0.0.1:{target.sockets[0].getsockname()[1]}"
    async with pproxy("http") as port:
        common = {"pool": pool, "scheme": "http", "host": "127.0.0.1", "username": "sup",
                  "password": "sup-pw", "check_target": check_target}
        live = await run(platform, "operator_upstream_add", port=port, **common)
        dead = await run(platform, "operator_upstream_add", port=free_tcp_port(), **common)
        off = await run(platform, "operator_upstream_add", port=free_tcp_port(), **common)
        await run(platform, "operator_upstream_set", upstream_id=off["upstream_id"], active=False)
        stop = asyncio.Event()
        loop = asyncio.create_task(run_checks(platform, stop, 60))

        async def health() -> dict[str, str]:
            return {u["upstream_id"]: u["health"] for u in await run(platform, "operator_upstream_list",
                                                                     pool=pool)}

        for _ in range(200):  # the loop's first pass stores its results (within the 5 s check timeout)
            if (await health())[live["upstream_id"]] != "unknown":
                break
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(loop, 10)
        assert await health() == {live["upstream_id"]: "up", dead["upstream_id"]: "down",
                                  off["upstream_id"]: "unknown"}
        results = await check_all(platform)
    target.close()
    assert results[live["upstream_id"]] == "up" and results[dead["upstream_id"]] == "down"
    assert off["upstream_id"] not in results
    listed = {u["upstream_id"]: u for u in await run(platform, "operator_upstream_list", pool=pool)}
    assert listed[live["upstream_id"]]["health"] == "up" and listed[off["upstream_id"]]["health"] == "unknown"
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
        await uow.commit()


async def test_an_interval_of_zero_runs_no_checks(platform: Platform, monkeypatch) -> None:
    monkeypatch.setattr(platform.settings, "upstream_check_seconds", 0)
    async with checks_task(platform):
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "upstream-checks"]
