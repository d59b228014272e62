"""Anti-sharing (issue 32.5): how many distinct client addresses may use a service within a window.

The customer's setting lives in `services.parameters["client_ip_limit"]` = {"max": N, "policy": P} (as
the own connection limit does: a watched column, so every gateway node reloads the service within its
change poll). The gateway (gateway/client_ips.py) keeps the addresses seen per service in the window
(PROXYPLANE_GATEWAY_CLIENT_IP_WINDOW_SECONDS, 600 s) and, once N are in it, refuses a new one
(`refuse_new`) or forgets the least recently seen one and admits the new one (`newest_wins`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.storage.models import Service

KEY = "client_ip_limit"
POLICIES = ("refuse_new", "newest_wins")
MAX_CLIENT_IPS = 1000  # a sane cap: above it the limit stops meaning anything (422)


@dataclass(frozen=True)
class ClientIpLimit:
    max_client_ips: int | None  # None: no limit
    policy: str


def of(parameters: dict[str, Any] | None) -> ClientIpLimit:
    raw = (parameters or {}).get(KEY)
    if not isinstance(raw, dict) or not isinstance(raw.get("max"), int) or raw["max"] < 1:
        return ClientIpLimit(None, "refuse_new")
    policy = raw.get("policy")
    return ClientIpLimit(int(raw["max"]), policy if policy in POLICIES else "refuse_new")


async def set_limit(
    session: AsyncSession, svc: Service, max_client_ips: int | None, policy: str
) -> ClientIpLimit:
    """Set (or, with None, remove) the service's client-address limit; 422 naming the field when out
    of 1..MAX_CLIENT_IPS or an unknown policy."""
    if max_client_ips is not None and (
        isinstance(max_client_ips, bool) or not 1 <= max_client_ips <= MAX_CLIENT_IPS
    ):
        raise ValidationFailed(
            f"max_client_ips must be between 1 and {MAX_CLIENT_IPS} (or null: no limit)",
            field="max_client_ips",
        )
    if policy not in POLICIES:
        raise ValidationFailed(f"policy must be one of {', '.join(POLICIES)}", field="policy")
    params = dict(svc.parameters or {})
    if max_client_ips is None:
        params.pop(KEY, None)
    else:
        params[KEY] = {"max": max_client_ips, "policy": policy}
    svc.parameters = params
    svc.updated_at = utcnow()  # the gateway's change marker
    await session.flush()
    return of(params)
