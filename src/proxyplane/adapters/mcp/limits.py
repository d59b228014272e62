"""Warnings before limits (issue 21.5): the resource `proxyplane://account/limits` (balance against the
customer's balance-low threshold, the calling key's spend caps, each rotating bandwidth service's quota in
its current period) with a `warnings` list. When that list is not empty after a spending tool call, the
standard notice of each era: 2025-11-25, a `warning` log notification on the call's stream; 2026-07-28
(which deprecates logging, SEP-2577), `notifications/resources/updated` for the resource on the account's
`subscriptions/listen` streams (listen.py), after which the agent reads the resource. A warning is raised
when the balance is below the threshold, a spend cap is more than 80 % used, or a bandwidth quota is more
than 80 % used. The resource and the notices read the registered operation `get_account_limits`
(domains/agent/limits.py, also `GET /customer/limits` and an MCP tool) through invoke: no query here."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context as MCPContext
from mcp.server.subscriptions import ResourceUpdated
from mcp_types.version import is_version_at_least

from proxyplane.adapters.mcp.sessions import ProxyPlaneMCP
from proxyplane.domains.agent.limits import ACCOUNT_LIMITS, AccountLimits
from proxyplane.ops import Caller, invoke
from proxyplane.platform import Platform

LIMITS_URI = "proxyplane://account/limits"
LISTEN_ERA = "2026-07-28"  # subscriptions/listen instead of log notifications


async def account_limits(platform: Platform, caller: Caller) -> AccountLimits:
    """The registered read `get_account_limits` (domains/agent/limits.py) for this caller."""
    result: AccountLimits = await invoke(platform, ACCOUNT_LIMITS, caller, None)
    return result


def register_limits_resource(server: ProxyPlaneMCP, platform: Platform, caller_of: Any) -> None:
    """`proxyplane://account/limits` on `server`, for the key (or token) of the reading request."""

    # a template (the SDK injects the request's Context only into template resources); one value: limits
    @server.resource(
        "proxyplane://account/{part}",
        name="account_limits",
        title="Account limits",
        description="Balance vs. the balance-low threshold, this key's spend caps, rotating bandwidth "
        "quotas, and warnings when one is near its end (balance below threshold, > 80 % of a cap or "
        "quota used).",
        mime_type="application/json",
    )
    async def limits(part: str, ctx: MCPContext[Any, Any]) -> str:
        if part != "limits":
            raise ValueError(f"unknown resource proxyplane://account/{part}; read {LIMITS_URI}")
        caller: Caller = caller_of(ctx)
        if caller.customer_id is None:
            return json.dumps({"warnings": [], "error": "an API key is required"})
        return json.dumps((await account_limits(platform, caller)).model_dump(mode="json"))


async def warn_near_limits(platform: Platform, ctx: MCPContext[Any, Any], caller: Caller) -> None:
    """After a spend, when a limit is near its end: the era's notice (module docstring)."""
    if caller.customer_id is None:
        return
    report = await account_limits(platform, caller)
    if not report.warnings:
        return
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, LISTEN_ERA):
        server = ctx.mcp_server
        if isinstance(server, ProxyPlaneMCP):
            await server.publish_to(caller.customer_id, ResourceUpdated(uri=LIMITS_URI))
        return
    data = {"resource": LIMITS_URI, "warnings": report.warnings}
    await ctx.log("warning", data, logger_name="limits")
