"""The `proxyplane` command: serve, migrate, gateway, admin ..."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import click

from proxyplane.core.errors import DomainError
from proxyplane.core.settings import Settings, get_settings


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.group()
def main() -> None:
    """ProxyPlane: the software of a proxy provider."""


@main.command()
def migrate() -> None:
    """Apply the database migrations to the configured database."""
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()
    run(upgrade(settings.resolved_database_url()))
    click.echo(f"migrated {_safe_url(settings.resolved_database_url())}")


@main.command()
@click.option("--host", default=None, help="API listen address (PROXYPLANE_API_HOST, default 127.0.0.1)")
@click.option("--port", default=None, type=int, help="API port (PROXYPLANE_API_PORT, default 8000)")
def serve(host: str | None, port: int | None) -> None:
    """Start everything on one machine: REST API, MCP, legacy API, dashboard, gateway and jobs.

    Configuration (environment): PROXYPLANE_HOME (default ./.proxyplane), PROXYPLANE_DATABASE_URL
    (default sqlite file under PROXYPLANE_HOME; postgresql://... to scale out), PROXYPLANE_API_HOST,
    PROXYPLANE_API_PORT, PROXYPLANE_PUBLIC_BASE_URL, PROXYPLANE_PAYMENT_PROCESSOR (test|stripe),
    PROXYPLANE_STRIPE_SECRET_KEY, PROXYPLANE_STRIPE_WEBHOOK_SECRET, PROXYPLANE_KYC_REQUIRED_METHODS.
    """
    from proxyplane.server import serve_all

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
    from proxyplane import listen_check
    from proxyplane.adapters.legacy import legacy_port
    from proxyplane.core.gateway_settings import GatewaySettings

    try:
        listen_check.check(listen_check.planned(settings, GatewaySettings(), legacy_port()))
    except listen_check.ListenError as exc:
        fail(str(exc))


def _safe_url(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


@main.group()
def admin() -> None:
    """Operator commands: customers, keys, wallets, KYC, partner discounts."""


def admin_call(fn: Callable[[Any, Settings], Awaitable[Any]]) -> Any:
    """Run `fn(session, settings)` in one unit of work on a migrated database; print errors on one line."""
    from proxyplane.storage.engine import Database
    from proxyplane.storage.migrate import upgrade

    settings = get_settings()

    async def go() -> Any:
        url = settings.resolved_database_url()
        await upgrade(url)
        db = Database(url)
        try:
            async with db.unit_of_work(write=True) as uow:
                result = await fn(uow.session, settings)
                await uow.commit()
                return result
        finally:
            await db.dispose()

    try:
        return run(go())
    except DomainError as exc:
        fail(exc.message)
    except ValueError as exc:
        fail(str(exc))


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


from proxyplane import admin_cli, admin_tickets_cli, worker_cli  # noqa: E402,F401  (register sub-commands)

# isort: split
from proxyplane import admin_stock_cli  # noqa: E402,F401  (admin stock/product/price)

# isort: split
from proxyplane import gateway_cli  # noqa: E402,F401  (proxyplane gateway)

# isort: split
from proxyplane import renewals_cli  # noqa: E402,F401  (proxyplane renewals)

# isort: split
from proxyplane import doctor_cli  # noqa: E402,F401  (proxyplane doctor)
