"""bench/scale at a CI size: grows the test database by a few hundred services, measures an idle poll at
two sizes, starts 2 real node subprocesses and sends whitelist changes through the domain to them."""

from __future__ import annotations

import pytest
from bench.scale.run import report, run

from proxyplane.platform import Platform

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_scale_bench_small(platform: Platform) -> None:
    r = await run(
        platform.db.url, [100, 600], ips_per_service=2, nodes=2, changes=4, keep=True, term_days=3650
    )
    small, large = r.polls
    assert large.services >= small.services + 500
    # an idle poll: the same statements whatever the size (1 on PostgreSQL, + BEGIN on SQLite)
    assert small.statements == large.statements <= 2
    assert [n.services for n in r.nodes] == [large.services] * 2
    assert all(n.rss_mib > 0 and n.fds > 0 for n in r.nodes)
    assert len(r.propagation_ms) == 2 * 4 and max(r.propagation_ms) < 5_000
    text = report(r, 2)
    assert "p99" in text and "descriptors per node" in text
