"""Apply a payment processor's event (a verified callback) in its own transaction, then tell the gateway
which services it changed. Called by the REST payment callback and by the test processor's checkout page:
doors of their own, so the transaction is owned here (like `ops.invoke`), not by either adapter."""

from __future__ import annotations

from proxyplane.domains.wallet.deposits import apply_payment_event
from proxyplane.platform import Platform


async def process_event(platform: Platform, event: object) -> dict[str, object]:
    async with platform.db.unit_of_work(write=True) as uow:
        try:
            deposit = await apply_payment_event(uow.session, event)  # type: ignore[arg-type]
        except ValueError as exc:
            return {"received": True, "applied": False, "error": str(exc)}
        changed = list(uow.call.changed_services)
        await uow.commit()
    for service_id in changed:
        platform.emit("entitlements_changed", service_id)
    if deposit is None:
        return {"received": True, "applied": False, "error": "unknown deposit"}
    return {"received": True, "applied": True, "deposit_id": str(deposit.id), "status": deposit.status}
