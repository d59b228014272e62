"""What cancelling a service refunds: the service's unused paid time plus its active add-ons' unused time.

`cancel_service` refunds through `services.cancel` (-> `services.cancel_refund_cents`) and
`addons.cancel` (-> `addons.refund_for`); `cancel_refund` adds up the very same two functions without
changing anything, so the preview and the cancel cannot disagree at the same instant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.addons import service as addons
from proxyplane.domains.services import service as services
from proxyplane.storage.models import Service

CANCELLABLE = ("pending", "active", "suspended")


@dataclass(frozen=True)
class CancelRefund:
    cancellable: bool
    service_cents: int
    addons_cents: int

    @property
    def total_cents(self) -> int:
        return self.service_cents + self.addons_cents


async def cancel_refund(session: AsyncSession, svc: Service, now: datetime) -> CancelRefund:
    """The refund a cancel at `now` would give (nothing is written)."""
    if svc.status not in CANCELLABLE:  # cancel is then a no-op: nothing more is refunded
        return CancelRefund(False, 0, 0)
    service_cents = services.cancel_refund_cents(svc, now)
    addon_cents = sum(addons.refund_for(a, now) for a in await addons.active_addons(session, svc.service_id))
    return CancelRefund(True, service_cents, addon_cents)
