"""Byte amounts as people read them: one rule for every page and door (issue 30.11).

Decimal units, as the plans are sold and as network traffic is counted: 1 kB = 1,000 bytes,
1 MB = 10**6, 1 GB = 10**9, 1 TB = 10**12 (docs/decisions/dashboard.md). `format_bytes` writes an amount
in the largest unit it reaches with three significant digits at most (trailing zeros dropped: "1.5 GB",
"953 MB", "10 GB"); `parse_amount` reads what a customer types in a form back into bytes."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
UNITS = {"B": 1, "kB": KB, "MB": MB, "GB": GB, "TB": TB}


def format_bytes(count: int | None) -> str:
    """ "1.5 GB" for 1,500,000,000; "0 B" for 0; "" for None."""
    if count is None:
        return ""
    sign = "-" if count < 0 else ""
    count = abs(int(count))
    if count < KB:
        return f"{sign}{count:,} B"
    names = list(UNITS)[1:]
    for i, name in enumerate(names):
        value = count / UNITS[name]
        decimals = 2 if value < 10 else 1 if value < 100 else 0
        if round(value, decimals) < 1000 or i == len(names) - 1:  # 999.6 MB reads "1 GB", not "1,000 MB"
            text = f"{value:,.{decimals}f}"
            text = text.rstrip("0").rstrip(".") if "." in text else text
            return f"{sign}{text} {name}"
    raise AssertionError("unreachable")


def parse_amount(raw: str, unit: str) -> int:
    """Bytes in `raw` (a decimal number, e.g. "1.5") of `unit` (a key of UNITS); ValueError when the text
    is not a positive number or the unit is unknown."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r} (one of {', '.join(UNITS)})")
    try:
        value = Decimal(raw.strip().replace(",", ""))
    except InvalidOperation:
        raise ValueError(f"{raw!r} is not a number") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{raw!r} is not a positive number")
    return int(value * UNITS[unit])
