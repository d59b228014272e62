"""A platform that sends through a given SMTP URL, on the test database, with fast retries and no
notification lag; and running the mail job's passes until a condition holds."""

from __future__ import annotations

from proxyplane.jobs.mail import MailWorker
from proxyplane.jobs.mail_pass import notify_pass
from proxyplane.platform import Platform


def mailing(platform: Platform, smtp_url: str, **extra: object) -> Platform:
    settings = platform.settings.model_copy(
        update={
            "smtp_url": smtp_url,
            "mail_retry_base_seconds": 0.05,
            "mail_retry_max_seconds": 0.2,
            "mail_notify_lag_seconds": 0.0,
            "smtp_timeout_seconds": 5.0,
            **extra,
        }
    )
    return Platform(settings, platform.db)


async def deliver(platform: Platform, passes: int = 3) -> int:
    """Run the notification pass and the sender `passes` times; how many sends were attempted."""
    worker = MailWorker(platform, name="test-mail")
    attempted = 0
    try:
        for _ in range(passes):
            await notify_pass(platform)
            while True:
                done = await worker.run_once(limit=50)
                attempted += done
                if done == 0:
                    break
    finally:
        await worker.close()
    return attempted
