"""The twelve API-key scopes of the customer API (seed, Authentication 6)."""

from enum import StrEnum


class Scope(StrEnum):
    catalog_read = "catalog:read"
    services_read = "services:read"
    services_write = "services:write"
    usage_read = "usage:read"
    wallet_read = "wallet:read"
    wallet_deposit = "wallet:deposit"
    wallet_spend = "wallet:spend"
    tickets_read = "tickets:read"
    tickets_write = "tickets:write"
    customer_read = "customer:read"
    customer_write = "customer:write"
    webhooks = "webhooks"


ALL_SCOPES: frozenset[str] = frozenset(s.value for s in Scope)


def parse_scopes(text: str) -> frozenset[str]:
    """Parse a comma-separated scope list (or `all`); raise ValueError naming an unknown scope."""
    text = text.strip()
    if text == "all":
        return ALL_SCOPES
    wanted = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(wanted - ALL_SCOPES)
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)}")
    if not wanted:
        raise ValueError("no scope given")
    return wanted
