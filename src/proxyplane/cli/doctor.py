"""`proxyplane doctor`: check this host's configuration and say what to fix (observability/doctor.py)."""

from __future__ import annotations

import click

from proxyplane.cli.common import run
from proxyplane.core.gateway_settings import GatewaySettings
from proxyplane.core.settings import get_settings


@click.command()
@click.option(
    "--gateway",
    is_flag=True,
    help="This is a gateway host: no local exit IP and a low open-files limit are errors.",
)
@click.option(
    "--ports/--no-ports",
    default=True,
    help="Check that the listen ports are free (skip on a host where ProxyPlane runs).",
)
def doctor(gateway: bool, ports: bool) -> None:
    """Check the configuration of this host: database reachable and migrated, secret key set and shared,
    exit IPs local to this gateway host, ports free, descriptor limit against the connection limits.
    Prints one line per finding (ok / FIX / note); exit 1 when anything needs fixing."""
    from proxyplane.observability.doctor import run_checks

    findings = run(run_checks(get_settings(), GatewaySettings(), gateway, ports))
    for finding in findings:
        click.echo(finding.line())
    problems = sum(1 for f in findings if f.ok is False)
    click.echo(f"{problems} problem(s) to fix" if problems else "nothing to fix")
    if problems:
        raise SystemExit(1)
