"""Helpers shared by the command modules: run a coroutine, fail on one line, an operator operation through
`invoke` (one unit of work per admin command), JSON output."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Awaitable
from typing import Any

import click

from proxyplane.core.errors import DomainError
from proxyplane.core.settings import get_settings


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


class LazyGroup(click.Group):
    """A command group whose subcommands are imported when used (start-up, issue 20.3): `lazy` maps a
    name to "module:attribute" (the command object), or to "module" alone when importing the module adds
    the command to this group itself (admin_stock, admin_tickets add theirs to `admin`)."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy.get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            module, _, attribute = target.partition(":")
            loaded = importlib.import_module(module)
            if attribute:
                self.add_command(getattr(loaded, attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


# The modules that declare the operator operations (doors {"cli"}): an admin command imports these, not the
# whole registry of every door (proxyplane.operations), which would cost start-up time on each command;
# tests/cli/test_startup.py checks that this list names every operator operation's module.
OPERATOR_MODULES = (
    "proxyplane.domains.accounts.operator_ops",
    "proxyplane.domains.geo.ops",
    "proxyplane.domains.mail.operator_ops",
    "proxyplane.domains.operators.desk_ops",
    "proxyplane.domains.operators.email_ops",
    "proxyplane.domains.operators.list_ops",
    "proxyplane.domains.operators.ops",
    "proxyplane.domains.operators.reseller_ops",
    "proxyplane.domains.operators.view_as",
    "proxyplane.domains.quotas.operator_ops",
    "proxyplane.domains.stock.operator_ops",
    "proxyplane.domains.stock.prefix_ops",
    "proxyplane.domains.tickets.operator_ops",
    "proxyplane.domains.upstreams.ops",
)


def operator_call(operation: str, /, **fields: Any) -> Any:
    """Run the registered operator operation `operation` (served by the "cli" door) through `invoke` on a
    migrated database; print errors on one line."""
    from proxyplane.ops import REGISTRY, Caller, invoke
    from proxyplane.platform import Platform
    from proxyplane.storage.migrate import upgrade

    for module in OPERATOR_MODULES:
        importlib.import_module(module)
    op = REGISTRY[operation]
    if not op.serves("cli"):
        raise RuntimeError(f"{operation} is not served by the cli door")
    settings = get_settings()

    async def go() -> Any:
        await upgrade(settings.resolved_database_url())
        platform = Platform(settings)
        try:
            data = op.input.model_validate(fields) if op.input is not None else None
            # the host's command line acts as a local owner, audited as "cli" (issue 33)
            cli = Caller(customer_id=None, channel="cli", role="owner", actor="cli")
            return await invoke(platform, op, cli, data)
        finally:
            await platform.close()

    try:
        return run(go())
    except DomainError as exc:
        fail(exc.message)
    except ValueError as exc:
        fail(str(exc))


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def safe_url(url: str) -> str:
    """A database URL without its credentials, for printing."""
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
