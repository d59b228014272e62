"""Proration of a term's price: charging the rest of a term and refunding its unused part.

Time is counted in whole units (default: one day). A unit that has started counts as used:
    total_units     = ceil((period_end - period_start) / unit)
    used_units      = ceil((at - period_start) / unit), clamped to 0..total_units
    remaining_units = total_units - used_units
    share           = round_half_up(amount_cents * remaining_units / total_units)
So a quote and a charge made on the same day give the same amount, the started day is never refunded
and never charged again, and the share only goes down as time passes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from proxyplane.domains.pricing.money import round_half_up

PRORATION_UNIT = timedelta(days=1)


def _ceil_units(delta: timedelta, unit: timedelta) -> int:
    # timedelta // timedelta floors; negate twice to ceil. Exact integer arithmetic on microseconds.
    return -(-delta // unit)


def remaining_units(
    period_start: datetime, period_end: datetime, at: datetime, *, unit: timedelta = PRORATION_UNIT
) -> tuple[int, int]:
    """(remaining_units, total_units) of the term at moment `at`."""
    if unit <= timedelta(0):
        raise ValueError("unit must be positive")
    if period_end <= period_start:
        raise ValueError("period_end must be after period_start")
    total = _ceil_units(period_end - period_start, unit)
    used = min(max(_ceil_units(at - period_start, unit), 0), total)
    return total - used, total


def prorate(
    amount_cents: int,
    period_start: datetime,
    period_end: datetime,
    at: datetime,
    *,
    unit: timedelta = PRORATION_UNIT,
) -> int:
    """The part of `amount_cents` (the price of the whole term) that covers the rest of the term from `at`.

    Used to charge for IPs or add-ons added mid-term. Never negative, never above `amount_cents`,
    non-increasing in `at`; the full amount before the term starts, 0 from its end.
    """
    if amount_cents < 0:
        raise ValueError("amount_cents must not be negative")
    remaining, total = remaining_units(period_start, period_end, at, unit=unit)
    return round_half_up(amount_cents * remaining, total)


def refund_unused(
    paid_cents: int,
    period_start: datetime,
    period_end: datetime,
    at: datetime,
    *,
    unit: timedelta = PRORATION_UNIT,
) -> int:
    """The refund for cancelling at `at` a term that cost `paid_cents`: the unused part, same rule as prorate.

    0 <= refund <= paid; the used part is `paid_cents - refund`.
    """
    return prorate(paid_cents, period_start, period_end, at, unit=unit)
