"""Helpers shared by the command modules: run a coroutine, fail on one line, an operator operation through
`invoke` (one unit of work per admin command), JSON output."""

from __future__ import annotations

import asyncio
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


def operator_call(operation: str, /, **fields: Any) -> Any:
    """Run the registered operator operation `operation` (served by the "cli" door) through `invoke` on a
    migrated database; print errors on one line."""
    from proxyplane.operations import REGISTRY
    from proxyplane.ops import Caller, invoke
    from proxyplane.platform import Platform
    from proxyplane.storage.migrate import upgrade

    op = REGISTRY[operation]
    if not op.serves("cli"):
        raise RuntimeError(f"{operation} is not served by the cli door")
    settings = get_settings()

    async def go() -> Any:
        await upgrade(settings.resolved_database_url())
        platform = Platform(settings)
        try:
            data = op.input.model_validate(fields) if op.input is not None else None
            return await invoke(platform, op, Caller(customer_id=None, channel="cli"), data)
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
