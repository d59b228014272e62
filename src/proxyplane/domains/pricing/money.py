"""Integer-cent arithmetic shared by pricing and proration.

The one rounding rule of ProxyPlane: every fractional amount of cents is rounded half up
(ties away from zero; all amounts here are non-negative) exactly once, at the line where the
fraction appears. Totals are sums of already rounded lines and are never rounded again.
"""

from __future__ import annotations


def round_half_up(numerator: int, denominator: int) -> int:
    """Return numerator / denominator rounded half up, for numerator >= 0 and denominator > 0."""
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    if numerator < 0:
        raise ValueError("numerator must not be negative")
    return (2 * numerator + denominator) // (2 * denominator)


def percent_of(amount_cents: int, percent: int) -> int:
    """`percent` % of a non-negative amount, rounded half up to whole cents."""
    return round_half_up(amount_cents * percent, 100)


def format_usd(amount_cents: int) -> str:
    """Render cents as dollars: 123456 -> "$1,234.56", -5 -> "-$0.05"."""
    sign = "-" if amount_cents < 0 else ""
    dollars, cents = divmod(abs(amount_cents), 100)
    return f"{sign}${dollars:,}.{cents:02d}"
