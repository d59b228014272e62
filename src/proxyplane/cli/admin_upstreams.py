"""`proxyplane admin upstream add|list|set|check|margin`: upstream proxy suppliers a rotating product can
draw from (issue 36.4); flags in, JSON out, over the registered operator operations
(domains/upstreams/ops.py). The password is read from a prompt (or --password) and never printed."""

from __future__ import annotations

import click

from proxyplane.cli.admin import admin
from proxyplane.cli.common import echo_json, operator_call


@admin.group()
def upstream() -> None:
    """Upstream proxy suppliers (pools a rotating product draws from), health checks, margin report."""


@upstream.command("add")
@click.option("--pool", required=True, help="the pool's name (a product's config upstream_pool)")
@click.option("--scheme", type=click.Choice(["http", "socks5"]), required=True)
@click.option("--host", required=True)
@click.option("--port", type=click.IntRange(1, 65535), required=True)
@click.option("--username", default="")
@click.option("--password", default="", help="the supplier password (kept sealed, never shown)")
@click.option("--template", default="{user}", help="e.g. '{user}[-country-{country}][-session-{session}]'")
@click.option("--cost-per-gb-cents", type=click.IntRange(0, 1_000_000), default=0)
@click.option("--position", type=click.IntRange(1, 1000), default=None, help="failover order (default: last)")
@click.option("--name", default="")
@click.option("--check-target", default="example.com:80", help="host:port the health check tunnels to")
def upstream_add(pool: str, scheme: str, host: str, port: int, username: str, password: str, template: str,
                 cost_per_gb_cents: int, position: int | None, name: str, check_target: str) -> None:
    """Register an upstream in a pool (a template naming an unknown field is refused)."""
    echo_json(operator_call("operator_upstream_add", pool=pool, scheme=scheme, host=host, port=port,
                            username=username, password=password, template=template,
                            cost_per_gb_cents=cost_per_gb_cents, position=position, name=name,
                            check_target=check_target))


@upstream.command("list")
@click.option("--pool", default=None)
def upstream_list(pool: str | None) -> None:
    """List upstreams in failover order (no password)."""
    echo_json(operator_call("operator_upstream_list", pool=pool))


@upstream.command("set")
@click.argument("upstream_id")
@click.option("--position", type=click.IntRange(1, 1000), default=None)
@click.option("--active/--inactive", default=None)
@click.option("--username", default=None)
@click.option("--password", default=None)
@click.option("--template", default=None)
@click.option("--cost-per-gb-cents", type=click.IntRange(0, 1_000_000), default=None)
@click.option("--name", default=None)
@click.option("--check-target", default=None)
def upstream_set(upstream_id: str, **changes: object) -> None:
    """Change an upstream (--inactive takes it out of its pool)."""
    echo_json(operator_call("operator_upstream_set", upstream_id=upstream_id, **changes))


@upstream.command("check")
@click.option("--id", "upstream_id", default=None, help="only this upstream")
@click.option("--pool", default=None, help="only this pool's")
def upstream_check(upstream_id: str | None, pool: str | None) -> None:
    """Health-check upstreams now (a tunnel to each one's check target); results stored and printed."""
    echo_json(operator_call("operator_upstream_check", upstream_id=upstream_id, pool=pool))


@upstream.command("margin")
@click.option("--days", type=click.IntRange(1, 366), default=30)
@click.option("--pool", default=None)
def upstream_margin(days: int, pool: str | None) -> None:
    """Revenue vs upstream cost per pool over the last DAYS days."""
    echo_json(operator_call("operator_upstream_margin", days=days, pool=pool))
