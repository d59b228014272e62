"""The renewal job: renew due auto-renewing services from the wallet, suspend on a short balance,
terminate after the grace period, expire the rest. Runs inside `proxyplane serve` (a lifespan part) and
on its own as `proxyplane renewals` when scaled out; several copies may run at once (see
domains/renewals/service.py for why a term is never renewed twice)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable
from datetime import datetime

from proxyplane.core.clock import utcnow
from proxyplane.core.settings import Settings
from proxyplane.domains.renewals.service import RenewalPolicy
from proxyplane.domains.renewals.steps import PassReport
from proxyplane.domains.services.service import ENTITLEMENTS_CHANGED
from proxyplane.jobs.background import background
from proxyplane.jobs.idempotency_prune import prune_idempotency
from proxyplane.jobs.mail_pass import remind_pass
from proxyplane.jobs.oauth_prune import prune_oauth
from proxyplane.jobs.payg_pass import payg_pass
from proxyplane.jobs.renewal_pass import run_pass
from proxyplane.jobs.stock_free_fold import fold_free_counts
from proxyplane.observability import metrics
from proxyplane.platform import Platform

log = logging.getLogger("proxyplane.renewals")
DEFAULT_INTERVAL_SECONDS = 60.0


async def run_once(
    platform: Platform, now: datetime | None = None, policy: RenewalPolicy | None = None
) -> PassReport:
    try:
        report = await run_pass(platform.db, now, policy or RenewalPolicy.from_env())
    except Exception:
        metrics.renewal_run(None)
        raise
    metrics.renewal_run(report)
    for service_id in report.changed:
        platform.emit(ENTITLEMENTS_CHANGED, service_id)
    await prune_idempotency(platform.db)  # by the real clock, not `now`: retention of replay records
    await prune_oauth(platform.db)  # spent OAuth requests and tokens, by the real clock too
    await fold_free_counts(platform.db)  # the stock's free-count deltas, one row per key (issue 15)
    await remind_pass(platform, now)  # expiry reminders by email, 3 days and 1 day before (issue 34)
    await payg_pass(platform.db, now)  # pay-as-you-go hours billed, refused services re-opened (issue 32.4)
    return report


async def run_forever(
    platform: Platform,
    stop: asyncio.Event,
    interval: float = DEFAULT_INTERVAL_SECONDS,
    clock: Callable[[], datetime] = utcnow,
) -> None:
    while not stop.is_set():
        try:
            report = await run_once(platform, clock())
            if report.changed or report.short:
                log.info(
                    "renewals: %d renewed, %d resumed, %d suspended, %d terminated, %d expired, %d short",
                    len(report.renewed),
                    len(report.resumed),
                    len(report.suspended),
                    len(report.terminated),
                    len(report.expired),
                    len(report.short),
                )
        except Exception:  # keep the job alive; the next pass retries
            log.exception("renewal pass failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


@contextlib.asynccontextmanager
async def renewal_task(platform: Platform, interval: float = DEFAULT_INTERVAL_SECONDS) -> AsyncIterator[None]:
    """An app lifespan part: the renewal job in the background until shutdown."""
    async with background(lambda stop: run_forever(platform, stop, interval), "renewals", grace=30):
        yield


async def run_standalone(settings: Settings, interval: float, once: bool) -> PassReport | None:
    """`proxyplane renewals`: migrate, then run passes until SIGINT/SIGTERM (or one pass with --once)."""
    from proxyplane.storage.migrate import upgrade

    await upgrade(settings.resolved_database_url())
    platform = Platform(settings)
    try:
        if once:
            return await run_once(platform)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await run_forever(platform, stop, interval)
        return None
    finally:
        await platform.close()
