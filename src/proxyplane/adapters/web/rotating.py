"""What a rotating service's page adds (issue 22.6): the plan's use this period against its quota (issue 32:
the enforced quota, its period, traffic bought, the add-traffic and auto top-up forms), and
ready-to-copy proxy URLs (http:// and socks5h:// with login and password) with the username options
explained. Reads only: get_service_usage over the current term, get_proxy_auth (revealed: the copy
buttons carry the password; the text shows it masked)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from starlette.requests import Request

from proxyplane.adapters.web.service_extras import optional
from proxyplane.core.clock import utcnow
from proxyplane.core.units import format_bytes

PERIOD_WORDS = {"term": "a term", "month": "a month", "none": "(a package: never expires)", "payg": "a unit"}
HEADINGS = {"term": "this term", "month": "this month", "none": "of the package", "payg": "(pay as you go)"}


@dataclass(frozen=True)
class PlanUse:
    plan: str  # "bandwidth", "requests" or "payg" (billed per started unit, issue 32.4)
    used: int
    quota: int  # the limit of the period (the plan's quota + traffic bought for it)
    since: datetime
    metered: Any = None  # get_service_quota's answer (issue 32): period, resets, bought traffic, top-up

    @property
    def period(self) -> str:
        return self.metered.period if self.metered is not None else "term"

    @property
    def per(self) -> str:
        return PERIOD_WORDS.get(self.period, "a term")

    @property
    def heading(self) -> str:
        return HEADINGS.get(self.period, "this term")

    @property
    def plan_quota(self) -> int:
        """The plan's own quota of a period (without traffic bought)."""
        if self.metered is None:
            return self.quota
        own = self.metered.quota_bytes if self.plan == "bandwidth" else self.metered.quota_requests
        return int(own) if own is not None else self.quota

    @property
    def buyable(self) -> bool:
        """Traffic can be added (a byte quota: add_traffic, auto top-up)."""
        return self.metered is not None and self.metered.quota_bytes is not None and self.plan != "payg"

    @property
    def percent(self) -> float:
        return min(100.0, 100.0 * self.used / self.quota) if self.quota > 0 else 0.0

    @property
    def left(self) -> int:
        return max(0, self.quota - self.used)

    def amount(self, value: int) -> str:
        if self.plan == "requests":
            return f"{value:,} requests"
        return format_bytes(value)


@dataclass(frozen=True)
class ProxyLine:
    label: str
    shown: str  # password masked
    copied: str  # the real line


def plan_quota(parameters: dict[str, Any]) -> tuple[str, int] | None:
    """('bandwidth', bytes) or ('requests', count) from the service's parameters; ('payg', 0) for a
    pay-as-you-go plan; None without a quota."""
    if parameters.get("plan") == "payg":
        return ("payg", 0)
    if parameters.get("plan") == "bandwidth":
        quota = int(parameters.get("quota_bytes", 0) or 0)
        return ("bandwidth", quota) if quota > 0 else None
    quota = int(parameters.get("quota_requests", 0) or 0)
    return ("requests", quota) if quota > 0 else None


async def plan_use(request: Request, svc: Any) -> PlanUse | None:
    found = plan_quota(svc.parameters or {})
    if found is None or svc.current_period_start is None:
        return None
    plan, quota = found
    # the enforced quota of the current period (issue 32): bought traffic included, periods reset
    metered = await optional(request, "get_service_quota", {"service_id": str(svc.service_id)})
    if metered is not None:
        since = metered.period_start or svc.current_period_start
        if plan in ("bandwidth", "payg") and metered.limit_bytes is not None:
            return PlanUse(plan, metered.used_bytes, metered.limit_bytes, since, metered)
        if plan == "requests" and metered.quota_requests is not None:
            return PlanUse(plan, metered.used_requests, metered.quota_requests, since, metered)
    span = {
        "service_id": str(svc.service_id),
        "start": svc.current_period_start.isoformat(),
        "end": (utcnow() + timedelta(minutes=1)).isoformat(),
    }
    totals = await optional(request, "get_service_usage", span)
    if totals is None:
        return None
    used = totals.bytes_total if plan == "bandwidth" else totals.requests
    return PlanUse(plan, used, quota, svc.current_period_start)


def proxy_lines(config: Any, login: str, password: str) -> list[ProxyLine]:
    user, secret = quote(login, safe=""), quote(password, safe="")
    mask = "•" * 8
    example = quote(f"{login}-session-abc123-ttl-10m", safe="")
    out = []
    for label, scheme, port, name in (
        ("HTTP / HTTPS", "http", config.http_port, user),
        ("SOCKS5 (DNS through the proxy)", "socks5h", config.socks5_port, user),
        ("HTTP, sticky session (same exit IP for 10 minutes)", "http", config.http_port, example),
    ):
        if port is None:
            continue
        address = f"{config.host}:{port}"
        out.append(
            ProxyLine(label, f"{scheme}://{name}:{mask}@{address}", f"{scheme}://{name}:{secret}@{address}")
        )
    return out


async def rotating_view(request: Request, svc: Any, config: Any) -> dict[str, Any]:
    """The template values of a live rotating service's page."""
    auth = await optional(request, "get_proxy_auth", {"service_id": str(svc.service_id), "reveal": True})
    lines = proxy_lines(config, auth.login, auth.password) if auth is not None and config is not None else []
    return {"plan_use": await plan_use(request, svc), "proxy_lines": lines}
