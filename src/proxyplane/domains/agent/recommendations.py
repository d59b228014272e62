"""Recommendations for a customer (or an agent acting for one), derived from real data: what the gateway
metered (usage_minutes / usage_errors), each service's limits, term and renewal setting, and the wallet.

Each recommendation says what to do (`action` + the tool/operation that does it), why (`reason`, with the
numbers) and the numbers themselves (`data`), so an agent can act on it or explain it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.domains.connections import service as connections
from proxyplane.domains.renewals.service import price_of_term
from proxyplane.domains.usage import service as usage
from proxyplane.domains.wallet import service as wallet
from proxyplane.storage.models import Service

EXPIRY_HORIZON = timedelta(days=7)  # expiring within this without auto-renew -> renew
AUTH_MIN_ERRORS = 10  # authentication refusals worth a look, ...
AUTH_MIN_SHARE = 0.05  # ... or this share of the requests
UPSTREAM_MIN_SHARE = 0.10  # upstream failures this common -> fresh IPs may help
LIVE = ("active", "suspended")


@dataclass
class Recommendation:
    kind: str
    severity: str  # high | medium | low
    service_id: uuid.UUID | None
    action: str  # the operation (= MCP tool) that acts on it
    reason: str
    data: dict[str, Any] = field(default_factory=dict)


SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


async def _service_recs(
    session: AsyncSession, svc: Service, start: datetime, now: datetime, days: int
) -> list[Recommendation]:
    out: list[Recommendation] = []
    sid = svc.service_id
    name = f"service #{svc.number}"
    totals = await usage.totals(session, sid, start, now)
    errors = totals.errors_by_category
    if svc.status == "suspended":
        out.append(
            Recommendation(
                "resume_service",
                "high",
                sid,
                "resume_service",
                f"{name} is suspended (its renewal was not paid); its proxies refuse every connection "
                f"({errors.get('inactive', 0)} refused in the last {days} days). Resuming charges the next "
                "term.",
                {"inactive_errors": errors.get("inactive", 0)},
            )
        )
    limit_hits = errors.get("limit", 0)
    if limit_hits:
        lim = await connections.limits(session, svc)
        if lim.custom_limit is not None and lim.custom_limit < lim.allowed_connections:
            action, kind, advice = (
                "set_connection_limit",
                "raise_connection_limit",
                f"your own limit is {lim.max_connections} while the plan allows {lim.allowed_connections}: "
                "raise it",
            )
        else:
            action, kind, advice = (
                "buy_addon",
                "extra_connections",
                "buy the extra_connections add-on (list_available_addons shows its price)",
            )
        out.append(
            Recommendation(
                kind,
                "high" if limit_hits >= 100 else "medium",
                sid,
                action,
                f"{name}: the gateway refused {limit_hits} connections over its limit of "
                f"{lim.max_connections} concurrent connections in the last {days} days; {advice}.",
                {
                    "limit_errors": limit_hits,
                    "max_connections": lim.max_connections,
                    "allowed_connections": lim.allowed_connections,
                    "requests": totals.requests,
                },
            )
        )
    # "auth" (before issue 22.4) and the split reasons: auth_wrong_password, auth_unknown_login, ...
    auth = sum(n for category, n in errors.items() if category == "auth" or category.startswith("auth_"))
    attempts = totals.requests + auth
    if auth >= AUTH_MIN_ERRORS or (attempts and auth / attempts >= AUTH_MIN_SHARE and auth > 0):
        share = round(100 * auth / attempts, 1) if attempts else 100.0
        out.append(
            Recommendation(
                "check_credentials",
                "high" if share >= 50 else "medium",
                sid,
                "get_proxy_auth",
                f"{name}: {auth} connections were refused for authentication in the last {days} days "
                f"({share}% of {attempts} attempts). Check the login/password your clients send "
                "(get_proxy_auth) or whitelist their IPs (add_proxy_whitelist; whoami shows your IP).",
                {"auth_errors": auth, "attempts": attempts, "auth_error_percent": share},
            )
        )
    upstream = errors.get("upstream", 0)
    if totals.requests and upstream / max(totals.requests, 1) >= UPSTREAM_MIN_SHARE and upstream >= 10:
        share = round(100 * upstream / totals.requests, 1)
        out.append(
            Recommendation(
                "refresh_ips",
                "low",
                sid,
                "refresh_ips",
                f"{name}: {upstream} requests failed upstream ({share}% of {totals.requests}) in the last "
                f"{days} days; destinations may be blocking these IPs. get_refresh_status says whether a "
                "refresh is free now.",
                {"upstream_errors": upstream, "requests": totals.requests, "upstream_error_percent": share},
            )
        )
    end = as_utc(svc.current_period_end) if svc.current_period_end else None
    if svc.status == "active" and end is not None and not svc.auto_renew and end - now <= EXPIRY_HORIZON:
        hours = max(0, int((end - now).total_seconds() // 3600))
        price = await price_of_term(session, svc)
        out.append(
            Recommendation(
                "renew",
                "high" if hours < 48 else "medium",
                sid,
                "renew_service",
                f"{name} expires in {hours} hours ({end:%Y-%m-%d %H:%M} UTC) and auto-renew is off; renew it "
                f"({price} cents for {svc.period_months} month(s)) or turn on auto-renew (set_auto_renew).",
                {"expires_at": end.isoformat(), "hours_left": hours, "renewal_price_cents": price},
            )
        )
    return out


async def _balance_rec(
    session: AsyncSession, customer_id: int, services: list[Service], now: datetime
) -> Recommendation | None:
    """Auto-renewing services due within the horizon that the balance cannot cover."""
    due = [
        s
        for s in services
        if s.status == "active"
        and s.auto_renew
        and s.current_period_end is not None
        and as_utc(s.current_period_end) - now <= EXPIRY_HORIZON
    ]
    if not due:
        return None
    needed = sum([await price_of_term(session, s) for s in due])
    have = await wallet.balance(session, customer_id)
    if have >= needed:
        return None
    numbers = ", ".join(f"#{s.number}" for s in due)
    return Recommendation(
        "top_up",
        "high",
        None,
        "init_deposit",
        f"auto-renewals of service(s) {numbers} within {EXPIRY_HORIZON.days} days need {needed} cents; the "
        f"balance is {have} cents, {needed - have} cents short. Start a top-up (init_deposit) so they do "
        "not get suspended.",
        {"renewals_cents": needed, "balance_cents": have, "missing_cents": needed - have},
    )


async def recommend(
    session: AsyncSession,
    customer_id: int,
    *,
    days: int,
    service_id: uuid.UUID | None = None,
    include_balance: bool = True,
    now: datetime | None = None,
) -> list[Recommendation]:
    now = now or utcnow()
    start = now - timedelta(days=days)
    q = select(Service).where(Service.customer_id == customer_id, Service.status.in_(LIVE))
    if service_id is not None:
        q = q.where(Service.service_id == service_id)
    services = list((await session.execute(q.order_by(Service.number))).scalars())
    out: list[Recommendation] = []
    for svc in services:
        out.extend(await _service_recs(session, svc, start, now, days))
    if include_balance:
        rec = await _balance_rec(session, customer_id, services, now)
        if rec is not None:
            out.append(rec)
    return sorted(out, key=lambda r: SEVERITY_ORDER[r.severity])
