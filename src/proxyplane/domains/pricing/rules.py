"""Price books: what an operator charges for each product kind.

All money is integer cents (USD). A `PriceBook` is immutable and validated on construction; its
plain-dict form (`to_dict` / `from_dict`) is what gets stored as JSON and edited by operators.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# proxy_ipv6: priced per subnet (a /64 by default) of a routed prefix; "IPs" of its quotes are subnets
PRODUCT_KINDS: tuple[str, ...] = ("proxy_datacenter", "proxy_isp", "proxy_personal", "proxy_ipv6")
ADDON_KINDS: tuple[str, ...] = ("udp", "extra_whitelist_slots", "extra_connections")
ADDON_PER: tuple[str, ...] = ("ip", "unit")


class PricingError(ValueError):
    """A request that cannot be priced (bad count, unknown period, unknown add-on...)."""


class PriceBookError(ValueError):
    """An invalid price book (bad operator configuration)."""


@dataclass(frozen=True)
class VolumeTier:
    """From `min_ips` IPs in total (all segments together) each IP costs `unit_price_cents` a month."""

    min_ips: int
    unit_price_cents: int


@dataclass(frozen=True)
class TermDiscount:
    """Paying `months` at once takes `percent` % off the period price."""

    months: int
    percent: int


@dataclass(frozen=True)
class AddonPrice:
    """Monthly price of an add-on.

    per == "ip": `monthly_cents` per IP of the service (e.g. UDP).
    per == "unit": `monthly_cents` per unit of `unit_size` (e.g. 1 whitelist slot, 100 connections).
    """

    kind: str
    monthly_cents: int
    per: str
    unit_size: int = 1


@dataclass(frozen=True)
class PriceBook:
    product_kind: str
    base_price_cents: int  # list price per IP per month, before any discount
    volume_tiers: tuple[VolumeTier, ...]  # ascending min_ips, the first at 1
    term_discounts: tuple[TermDiscount, ...]  # ascending months, must include 1 month at 0 %
    min_order_ips: int
    min_order_cents: int  # compared with the retail monthly total of an order
    included_connections_per_ip: int
    included_whitelist_slots: int
    addons: tuple[AddonPrice, ...]
    refresh_price_cents_per_ip: int  # paid, off-cycle refresh
    free_refresh_interval_days: int  # one free scheduled refresh per this many days; 0 = never free

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def allowed_periods(self) -> tuple[int, ...]:
        return tuple(t.months for t in self.term_discounts)

    def tier_for(self, ip_count: int) -> VolumeTier:
        """The volume tier that applies to an order of `ip_count` IPs in total."""
        if ip_count < 1:
            raise PricingError("ip count must be at least 1")
        chosen = self.volume_tiers[0]
        for tier in self.volume_tiers:
            if tier.min_ips <= ip_count:
                chosen = tier
        return chosen

    def term_discount_percent(self, period_months: int) -> int:
        for term in self.term_discounts:
            if term.months == period_months:
                return term.percent
        allowed = ", ".join(str(m) for m in self.allowed_periods)
        raise PricingError(f"period_months must be one of {allowed}, got {period_months}")

    def addon(self, kind: str) -> AddonPrice:
        for addon in self.addons:
            if addon.kind == kind:
                return addon
        raise PricingError(f"add-on {kind!r} is not sold for {self.product_kind}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "product_kind": self.product_kind,
            "base_price_cents": self.base_price_cents,
            "volume_tiers": [
                {"min_ips": t.min_ips, "unit_price_cents": t.unit_price_cents} for t in self.volume_tiers
            ],
            "term_discounts": [{"months": t.months, "percent": t.percent} for t in self.term_discounts],
            "min_order_ips": self.min_order_ips,
            "min_order_cents": self.min_order_cents,
            "included_connections_per_ip": self.included_connections_per_ip,
            "included_whitelist_slots": self.included_whitelist_slots,
            "addons": [
                {"kind": a.kind, "monthly_cents": a.monthly_cents, "per": a.per, "unit_size": a.unit_size}
                for a in self.addons
            ],
            "refresh_price_cents_per_ip": self.refresh_price_cents_per_ip,
            "free_refresh_interval_days": self.free_refresh_interval_days,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PriceBook:
        """Build from the plain-dict form; every key is required and unknown keys are rejected."""
        expected = set(_FIELDS)
        unknown = set(data) - expected
        missing = expected - set(data)
        if unknown or missing:
            raise PriceBookError(f"price book keys: unknown {sorted(unknown)}, missing {sorted(missing)}")
        try:
            return cls(
                product_kind=_str(data, "product_kind"),
                base_price_cents=_int(data, "base_price_cents"),
                volume_tiers=tuple(
                    VolumeTier(min_ips=_int(t, "min_ips"), unit_price_cents=_int(t, "unit_price_cents"))
                    for t in _list(data, "volume_tiers")
                ),
                term_discounts=tuple(
                    TermDiscount(months=_int(t, "months"), percent=_int(t, "percent"))
                    for t in _list(data, "term_discounts")
                ),
                min_order_ips=_int(data, "min_order_ips"),
                min_order_cents=_int(data, "min_order_cents"),
                included_connections_per_ip=_int(data, "included_connections_per_ip"),
                included_whitelist_slots=_int(data, "included_whitelist_slots"),
                addons=tuple(
                    AddonPrice(
                        kind=_str(a, "kind"),
                        monthly_cents=_int(a, "monthly_cents"),
                        per=_str(a, "per"),
                        unit_size=_int(a, "unit_size") if "unit_size" in a else 1,
                    )
                    for a in _list(data, "addons")
                ),
                refresh_price_cents_per_ip=_int(data, "refresh_price_cents_per_ip"),
                free_refresh_interval_days=_int(data, "free_refresh_interval_days"),
            )
        except (KeyError, TypeError) as exc:
            raise PriceBookError(f"malformed price book: {exc}") from exc


_FIELDS = (
    "product_kind",
    "base_price_cents",
    "volume_tiers",
    "term_discounts",
    "min_order_ips",
    "min_order_cents",
    "included_connections_per_ip",
    "included_whitelist_slots",
    "addons",
    "refresh_price_cents_per_ip",
    "free_refresh_interval_days",
)


def pricebook_with_overrides(base: PriceBook, overrides: Mapping[str, Any]) -> PriceBook:
    """A copy of `base` with some top-level keys of the dict form replaced (lists are replaced whole)."""
    return PriceBook.from_dict({**base.to_dict(), **overrides})


def pricebooks_from_dict(data: Mapping[str, Mapping[str, Any]]) -> dict[str, PriceBook]:
    """Operator configuration {product_kind: partial dict} layered over `DEFAULT_PRICEBOOKS`."""
    books = dict(DEFAULT_PRICEBOOKS)
    for kind, overrides in data.items():
        if kind not in books:
            raise PriceBookError(f"unknown product kind {kind!r}")
        books[kind] = pricebook_with_overrides(books[kind], overrides)
    return books


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise PriceBookError(f"{key} must be an integer, got {value!r}")
    return value


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise PriceBookError(f"{key} must be a string, got {value!r}")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data[key]
    if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
        raise PriceBookError(f"{key} must be a list of objects")
    return list(value)


def _validate(book: PriceBook) -> None:
    def fail(message: str) -> None:
        raise PriceBookError(f"{book.product_kind}: {message}")

    if book.product_kind not in PRODUCT_KINDS:
        fail(f"unknown product kind, expected one of {PRODUCT_KINDS}")
    if book.base_price_cents < 0:
        fail("base_price_cents must not be negative")
    tiers = book.volume_tiers
    if not tiers or tiers[0].min_ips != 1:
        fail("volume_tiers must start at min_ips 1")
    for lower, upper in zip(tiers, tiers[1:], strict=False):
        if upper.min_ips <= lower.min_ips:
            fail("volume_tiers min_ips must be strictly ascending")
        if upper.unit_price_cents > lower.unit_price_cents:
            fail("a larger volume tier must not cost more per IP")
    for tier in tiers:
        if not 0 <= tier.unit_price_cents <= book.base_price_cents:
            fail("tier unit_price_cents must be between 0 and base_price_cents")
    months = [t.months for t in book.term_discounts]
    if months != sorted(set(months)) or 1 not in months or months[0] < 1:
        fail("term_discounts must list distinct ascending months >= 1, including 1")
    for term in book.term_discounts:
        if not 0 <= term.percent < 100 or (term.months == 1 and term.percent != 0):
            fail("term discount percent must be 0..99, and 0 for 1 month")
    for name in (
        "min_order_ips",
        "min_order_cents",
        "included_connections_per_ip",
        "included_whitelist_slots",
        "refresh_price_cents_per_ip",
        "free_refresh_interval_days",
    ):
        if getattr(book, name) < 0:
            fail(f"{name} must not be negative")
    kinds = [a.kind for a in book.addons]
    if len(kinds) != len(set(kinds)):
        fail("add-on kinds must be unique")
    for addon in book.addons:
        if addon.kind not in ADDON_KINDS:
            fail(f"unknown add-on kind {addon.kind!r}, expected one of {ADDON_KINDS}")
        if addon.per not in ADDON_PER:
            fail(f"add-on per must be one of {ADDON_PER}")
        if addon.monthly_cents < 0 or addon.unit_size < 1:
            fail("add-on monthly_cents must be >= 0 and unit_size >= 1")


_TIER_STARTS = (1, 10, 50, 100, 500)
_TERMS = (TermDiscount(1, 0), TermDiscount(3, 5), TermDiscount(6, 10), TermDiscount(12, 15))


def _book(
    kind: str,
    prices: tuple[int, int, int, int, int],
    *,
    connections: int,
    udp_per_ip: int,
    slot: int,
    connections_per_100: int,
    refresh: int,
) -> PriceBook:
    return PriceBook(
        product_kind=kind,
        base_price_cents=prices[0],
        volume_tiers=tuple(VolumeTier(s, p) for s, p in zip(_TIER_STARTS, prices, strict=True)),
        term_discounts=_TERMS,
        min_order_ips=1,
        min_order_cents=100,
        included_connections_per_ip=connections,
        included_whitelist_slots=3,
        addons=(
            AddonPrice("udp", udp_per_ip, "ip"),
            AddonPrice("extra_whitelist_slots", slot, "unit", 1),
            AddonPrice("extra_connections", connections_per_100, "unit", 100),
        ),
        refresh_price_cents_per_ip=refresh,
        free_refresh_interval_days=30,
    )


# Defaults sit at or just under the market ("from $0.07 / $0.25 / $2 per IP a month" for datacenter,
# ISP and dedicated IPv4, see design/provider-notes.md); the cheapest tier matches those floors.
DEFAULT_PRICEBOOKS: dict[str, PriceBook] = {
    "proxy_datacenter": _book(
        "proxy_datacenter",
        (15, 13, 11, 9, 7),
        connections=50,
        udp_per_ip=3,
        slot=50,
        connections_per_100=100,
        refresh=5,
    ),
    "proxy_isp": _book(
        "proxy_isp",
        (60, 50, 40, 32, 25),
        connections=100,
        udp_per_ip=10,
        slot=50,
        connections_per_100=150,
        refresh=15,
    ),
    "proxy_personal": _book(
        "proxy_personal",
        (300, 275, 250, 225, 200),
        connections=200,
        udp_per_ip=30,
        slot=50,
        connections_per_100=200,
        refresh=50,
    ),
    # per /64 a month (IPv6 from routed prefixes, issue 16): under the IPv4 floors, as the market sells
    "proxy_ipv6": _book(
        "proxy_ipv6",
        (100, 90, 80, 70, 60),
        connections=200,
        udp_per_ip=10,
        slot=50,
        connections_per_100=100,
        refresh=50,
    ),
}
