"""Warnings before limits (issue 21.5): the resource `proxyplane://account/limits` (balance against the
customer's balance-low threshold, the calling key's spend caps, each rotating bandwidth service's quota in
its current period) with a `warnings` list. When that list is not empty after a spending tool call, the
standard notice of each era: 2025-11-25, a `warning` log notification on the call's stream; 2026-07-28
(which deprecates logging, SEP-2577), `notifications/resources/updated` for the resource on the account's
`subscriptions/listen` streams (listen.py), after which the agent reads the resource. A warning is raised
when the balance is below the threshold, a spend cap is more than 80 % used, or a bandwidth quota is more
than 80 % used."""

from __future__ import annotations

import json
import uuid
from typing import Any

from mcp.server.mcpserver import Context as MCPContext
from mcp.server.subscriptions import ResourceUpdated
from mcp_types.version import is_version_at_least
from sqlalchemy import func, select

from proxyplane.adapters.mcp.sessions import ProxyPlaneMCP
from proxyplane.domains.apikeys import caps
from proxyplane.domains.events.service import balance_threshold
from proxyplane.domains.wallet.service import balance
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import UsageMinute
from proxyplane.storage.models.services import CatalogProduct, Service

LIMITS_URI = "proxyplane://account/limits"
LISTEN_ERA = "2026-07-28"  # subscriptions/listen instead of log notifications
NEAR = 0.8  # more than 80 % used is "near its end"


def _cap(name: str, limit: int | None, spent: int) -> dict[str, Any] | None:
    if limit is None:
        return None
    return {"cap": name, "limit_cents": limit, "spent_cents": spent, "near": spent > NEAR * limit}


async def account_limits(platform: Platform, customer_id: int, key_id: uuid.UUID | None) -> dict[str, Any]:
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        cents = await balance(s, customer_id)
        threshold = await balance_threshold(s, customer_id)
        cap = (await caps.caps_of(s, [key_id])).get(key_id, caps.NO_CAPS) if key_id else caps.NO_CAPS
        rows = (
            await s.execute(
                select(Service.service_id, Service.current_period_start, CatalogProduct.config)
                .join(CatalogProduct, CatalogProduct.product_id == Service.product_id)
                .where(
                    Service.customer_id == customer_id,
                    Service.status == "active",
                    Service.product_kind == "proxy_rotating",
                )
            )
        ).all()
        quotas = []
        for service_id, start, config in rows:
            quota = (config or {}).get("quota_bytes")
            if (config or {}).get("plan") != "bandwidth" or not isinstance(quota, int) or quota <= 0:
                continue
            total = func.coalesce(func.sum(UsageMinute.bytes_up + UsageMinute.bytes_down), 0)
            used_q = select(total).where(UsageMinute.service_id == service_id)
            if start is not None:
                used_q = used_q.where(UsageMinute.minute >= start)
            used = int(await s.scalar(used_q) or 0)
            near = used > NEAR * quota
            row = {"service_id": str(service_id), "quota_bytes": quota, "used_bytes": used, "near": near}
            quotas.append(row)
    spend_caps = [
        c
        for c in (
            _cap("daily", cap.daily_limit_cents, cap.spent_today_cents),
            _cap("total", cap.total_limit_cents, cap.spent_total_cents),
        )
        if c is not None
    ]
    warnings = []
    if threshold is not None and cents < threshold:
        warnings.append(f"balance {cents} cents is below the balance-low threshold of {threshold} cents")
    warnings += [
        f"this key's {c['cap']} spend cap is {c['spent_cents']} of {c['limit_cents']} cents used"
        for c in spend_caps
        if c["near"]
    ]
    warnings += [
        f"rotating service {q['service_id']} used {q['used_bytes']} of {q['quota_bytes']} bytes this period"
        for q in quotas
        if q["near"]
    ]
    return {
        "balance_cents": cents,
        "balance_low_threshold_cents": threshold,
        "spend_caps": spend_caps,
        "bandwidth_quotas": quotas,
        "warnings": warnings,
    }


def register_limits_resource(server: Any, platform: Platform, principal_of: Any) -> None:
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
        principal = principal_of(ctx)
        if principal is None:
            return json.dumps({"warnings": [], "error": "an API key is required"})
        return json.dumps(await account_limits(platform, principal.customer_id, principal.key_id))


async def warn_near_limits(platform: Platform, ctx: MCPContext[Any, Any], principal: Any) -> None:
    """After a spend, when a limit is near its end: the era's notice (module docstring)."""
    if principal is None:
        return
    report = await account_limits(platform, principal.customer_id, principal.key_id)
    if not report["warnings"]:
        return
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, LISTEN_ERA):
        server = ctx.mcp_server
        if isinstance(server, ProxyPlaneMCP):
            await server.publish_to(principal.customer_id, ResourceUpdated(uri=LIMITS_URI))
        return
    data = {"resource": LIMITS_URI, "warnings": report["warnings"]}
    await ctx.log("warning", data, logger_name="limits")
