"""Speed limits (issue 32.6): a service's cap in bytes per second, all its tunnels together.

Stored in `services.parameters["speed_limit_bps"]` (a watched column: every gateway node reloads the
service); the gateway relays a limited service's tunnels through one token bucket per process
(gateway/speed.py). 0 or below MIN_BPS, or above MAX_BPS: 422 naming the field."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.storage.models import Service

KEY = "speed_limit_bps"
MIN_BPS = 1_000  # 1 kB/s: below, a tunnel's handshakes time out
MAX_BPS = 100_000_000_000  # 100 GB/s: above, it limits nothing


def of(parameters: dict[str, Any] | None) -> int | None:
    value = (parameters or {}).get(KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def set_limit(session: AsyncSession, svc: Service, bytes_per_second: int | None) -> int | None:
    if bytes_per_second is not None and (
        isinstance(bytes_per_second, bool) or not MIN_BPS <= bytes_per_second <= MAX_BPS
    ):
        raise ValidationFailed(
            f"bytes_per_second must be between {MIN_BPS} and {MAX_BPS} (or null: no limit)",
            field="bytes_per_second",
        )
    params = dict(svc.parameters or {})
    if bytes_per_second is None:
        params.pop(KEY, None)
    else:
        params[KEY] = bytes_per_second
    svc.parameters = params
    svc.updated_at = utcnow()  # the gateway's change marker
    await session.flush()
    return of(params)
