"""Health checks of the upstream suppliers (issue 36.4) by the job worker (`proxyplane serve` and
`proxyplane worker`): every PROXYPLANE_UPSTREAM_CHECK_SECONDS (default 300; 0: never) every active
supplier is checked as `proxyplane admin upstream check` does (a tunnel through it to its check target,
one HEAD over it), in one transaction that stores the results; gateway nodes read them at their next poll
and try suppliers found down last. Several workers checking at once is harmless (the last write wins)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from proxyplane.domains.upstreams import service as upstreams
from proxyplane.jobs.background import background
from proxyplane.platform import Platform

log = logging.getLogger("proxyplane.upstreams")


async def check_all(platform: Platform) -> dict[str, str]:
    """{upstream id: health} of every active supplier, checked now and stored."""
    async with platform.db.unit_of_work() as uow:
        checked = await upstreams.check(uow.session, platform.secrets, None, None)
        await uow.commit()
    return {str(u.upstream_id): u.health for u in checked}


async def run_checks(platform: Platform, stop: asyncio.Event, interval: float) -> None:
    while not stop.is_set():
        try:
            await check_all(platform)
        except Exception:  # a failed pass leaves the last results: try again next time
            log.exception("upstream health checks failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


@contextlib.asynccontextmanager
async def checks_task(platform: Platform) -> AsyncIterator[None]:
    """Runs `run_checks` in the background until the block exits (nothing when the interval is 0)."""
    interval = platform.settings.upstream_check_seconds
    if interval <= 0:
        yield
        return
    async with background(lambda stop: run_checks(platform, stop, interval), "upstream-checks",
                          grace=upstreams.CHECK_TIMEOUT + 1):
        yield
