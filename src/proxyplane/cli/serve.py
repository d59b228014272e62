"""`proxyplane migrate` and `proxyplane serve` (everything on one machine; server.py runs it)."""

from __future__ import annotations

from typing import Any

import click

from proxyplane.cli.common import fail, run, safe_url
from proxyplane.core.settings import Settings, get_settings


@click.command()
def migrate() -> None:
    """Apply the database migrations to the configured database."""
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()
    run(upgrade(settings.resolved_database_url()))
    click.echo(f"migrated {safe_url(settings.resolved_database_url())}")


@click.command()
@click.option("--host", default=None, help="API listen address (PROXYPLANE_API_HOST, default 127.0.0.1)")
@click.option("--port", default=None, type=int, help="API port (PROXYPLANE_API_PORT, default 8000)")
def serve(host: str | None, port: int | None) -> None:
    """Start everything on one machine: REST API, MCP, legacy API, dashboard, gateway and jobs.

    Configuration (environment): PROXYPLANE_HOME (default ./.proxyplane), PROXYPLANE_DATABASE_URL
    (default sqlite file under PROXYPLANE_HOME; postgresql://... to scale out), PROXYPLANE_API_HOST,
    PROXYPLANE_API_PORT, PROXYPLANE_PUBLIC_BASE_URL, PROXYPLANE_PAYMENT_PROCESSOR (test|stripe),
    PROXYPLANE_STRIPE_SECRET_KEY, PROXYPLANE_STRIPE_WEBHOOK_SECRET, PROXYPLANE_KYC_REQUIRED_METHODS.
    """
    from proxyplane.cli.server import serve_all

    settings = get_settings()
    overrides: dict[str, Any] = {}
    if host:
        overrides["api_host"] = host
    if port:
        overrides["api_port"] = port
    if overrides:
        settings = settings.model_copy(update=overrides)
    _check_ports(settings)
    serve_all(settings)


def _check_ports(settings: Settings) -> None:
    """A port already taken: one line naming the address and the setting, exit 2 (no traceback)."""
    from proxyplane.adapters.legacy import legacy_port
    from proxyplane.core import listen_check
    from proxyplane.core.gateway_settings import GatewaySettings

    try:
        listen_check.check(listen_check.planned(settings, GatewaySettings(), legacy_port()))
    except listen_check.ListenError as exc:
        fail(str(exc))
