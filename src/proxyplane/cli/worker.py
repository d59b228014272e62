"""`proxyplane worker`: the background jobs (webhook outbox) on their own, for scaled-out deployments."""

from __future__ import annotations

import click

from proxyplane.cli.common import run
from proxyplane.core.settings import get_settings


@click.command()
def worker() -> None:
    """Deliver webhooks from the outbox until stopped (SIGINT/SIGTERM). Safe to run several copies:
    rows are claimed with SKIP LOCKED on PostgreSQL. Set PROXYPLANE_WORKER_IN_SERVE=false on the API
    nodes when workers run separately."""
    from proxyplane.jobs.worker import run_worker
    from proxyplane.observability import logs

    logs.from_env()  # PROXYPLANE_LOG_FORMAT=json: one JSON object per line, secrets redacted
    click.echo("webhook worker running; Ctrl-C to stop", err=True)
    run(run_worker(get_settings()))
