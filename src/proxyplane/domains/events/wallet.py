"""Wallet events, called by domains/wallet for every ledger entry in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.events.service import after_debit, emit
from proxyplane.storage.models import Deposit, LedgerEntry


async def ledger_entry_added(session: AsyncSession, entry: LedgerEntry) -> None:
    """wallet.credited for a credit; wallet.balance_low when a debit crosses the threshold."""
    if entry.amount_cents > 0:
        data: dict[str, Any] = {
            "entry_id": entry.id,
            "amount_cents": entry.amount_cents,
            "balance_cents": entry.balance_after_cents,
            "kind": entry.kind,
            "description": entry.description,
            "deposit_id": str(entry.deposit_id) if entry.deposit_id else None,
            "service_id": str(entry.service_id) if entry.service_id else None,
        }
        await emit(session, entry.customer_id, "wallet.credited", data)
    elif entry.amount_cents < 0:
        before = entry.balance_after_cents - entry.amount_cents
        await after_debit(session, entry.customer_id, before, entry.balance_after_cents)


async def deposit_failed(session: AsyncSession, deposit: Deposit) -> None:
    data = {
        "deposit_id": str(deposit.id),
        "amount_cents": deposit.amount_cents,
        "payment_method": deposit.payment_method,
        "processor": deposit.processor,
    }
    await emit(session, deposit.customer_id, "deposit.failed", data)
