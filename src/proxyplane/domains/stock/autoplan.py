"""Auto-plan: spread a total IP count over the countries in stock.

Rule (deterministic, pure):
1. Drop excluded countries (compared case-insensitively) and countries with no stock.
2. Order the rest by available count, most first; ties by country code.
3. Give each country its proportional share `total * available / all_available`, rounded down,
   then hand the IPs still missing one each to the largest remainders (ties: the order of step 2).
   This is the largest-remainder (Hamilton) method; a country never gets more than it has,
   because a share is at most its availability and only fractional shares are rounded up.
4. Return (country, count) pairs with count > 0, in the order of step 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class AutoPlanError(ValueError):
    """The total cannot be planned (not a positive integer, or negative availability)."""


class InsufficientStock(AutoPlanError):
    def __init__(self, requested: int, available: int) -> None:
        super().__init__(
            f"not enough IPs in stock: requested {requested}, available {available} "
            "in the countries not excluded"
        )
        self.requested = requested
        self.available = available


def auto_plan(
    total: int, availability: Mapping[str, int], excluded: Iterable[str] = ()
) -> list[tuple[str, int]]:
    """Split `total` IPs over countries in proportion to their available counts (see module doc)."""
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise AutoPlanError(f"total must be a positive integer, got {total!r}")
    if any(count < 0 for count in availability.values()):
        raise AutoPlanError("available counts must not be negative")
    skip = {code.upper() for code in excluded}
    stock = sorted(
        ((code, count) for code, count in availability.items() if count > 0 and code.upper() not in skip),
        key=lambda item: (-item[1], item[0]),
    )
    pool = sum(count for _, count in stock)
    if pool < total:
        raise InsufficientStock(total, pool)
    floors = [total * count // pool for _, count in stock]
    remainders = [total * count % pool for _, count in stock]
    missing = total - sum(floors)
    by_remainder = sorted(range(len(stock)), key=lambda i: -remainders[i])  # stable: step-2 order on ties
    for i in by_remainder[:missing]:
        floors[i] += 1
    return [(code, n) for (code, _), n in zip(stock, floors, strict=True) if n > 0]
