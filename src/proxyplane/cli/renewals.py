"""`proxyplane renewals`: the renewal job on its own (scaled-out deployments)."""

from __future__ import annotations

import click

from proxyplane.cli.common import echo_json, run
from proxyplane.core.settings import get_settings


@click.command()
@click.option("--interval", default=60.0, show_default=True, help="seconds between passes")
@click.option("--once", is_flag=True, help="run one pass, print what it did, exit")
def renewals(interval: float, once: bool) -> None:
    """Renew due auto-renewing services from the wallet, suspend on a short balance, terminate after the
    grace period, expire the rest. Safe to run several copies at once. Set PROXYPLANE_RENEWALS_IN_SERVE=false
    on the API nodes when this runs separately."""
    from proxyplane.jobs.renewals import run_standalone
    from proxyplane.observability import logs

    logs.from_env()  # PROXYPLANE_LOG_FORMAT=json: one JSON object per line, secrets redacted
    report = run(run_standalone(get_settings(), interval, once))
    if report is not None:
        echo_json({k: [str(s) for s in v] for k, v in vars(report).items()})
