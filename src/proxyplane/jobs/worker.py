"""Running the jobs: as an async task inside `proxyplane serve`, or on its own as `proxyplane worker`."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator

from proxyplane.core.settings import Settings
from proxyplane.jobs.background import background
from proxyplane.jobs.change_notifier import notifier_task
from proxyplane.jobs.mail import MailWorker
from proxyplane.jobs.stock_free_fold import fold_task
from proxyplane.jobs.upstream_checks import checks_task
from proxyplane.jobs.webhooks import WebhookWorker
from proxyplane.platform import Platform


@contextlib.asynccontextmanager
async def worker_task(platform: Platform) -> AsyncIterator[WebhookWorker]:
    """An app lifespan part: runs the webhook worker, the change notifier (PostgreSQL) and the stock
    free-count fold and the mail job (issue 34) in the background until shutdown."""
    worker = WebhookWorker(platform)
    mail = MailWorker(platform)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run_forever(stop), name="webhook-worker")
    try:
        async with (
            notifier_task(platform.db), fold_task(platform.db), background(mail.run_forever, "mail"),
            checks_task(platform),
        ):
            yield worker
    finally:
        await mail.close()
        stop.set()
        try:
            await asyncio.wait_for(task, platform.settings.webhook_timeout_seconds + 5)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
        await worker.close()


async def run_worker(settings: Settings) -> None:
    """`proxyplane worker`: migrate, then deliver (and notify gateway changes) until SIGINT/SIGTERM."""
    from proxyplane.storage.migrate import upgrade

    await upgrade(settings.resolved_database_url())
    platform = Platform(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    worker = WebhookWorker(platform)
    mail = MailWorker(platform)
    try:
        async with (
            notifier_task(platform.db), fold_task(platform.db), background(mail.run_forever, "mail"),
            checks_task(platform),
        ):
            await worker.run_forever(stop)
    finally:
        await mail.close()
        await worker.close()
        await platform.close()
