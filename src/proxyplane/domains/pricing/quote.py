"""Pure quoting: segments + term + partner discount -> priced lines and totals (integer cents).

Per line (one segment), in this order, rounding half up only where a percent is taken:
    unit_price            = price of the volume tier chosen by the TOTAL IP count of the quote
    volume_discount       = (base_price - unit_price) * count                       (exact)
    retail_monthly        = unit_price * count                                      (exact)
    partner_discount_mo   = round_half_up(retail_monthly * partner_percent / 100)
    monthly               = retail_monthly - partner_discount_mo
    term_discount         = round_half_up(monthly * months * term_percent / 100)
    total                 = monthly * months - term_discount                         (the period price)
The retail_* figures are the same computation with partner_percent = 0.
Every quote total is the sum of the same figure over its lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from proxyplane.domains.pricing.money import percent_of, round_half_up
from proxyplane.domains.pricing.proration import prorate
from proxyplane.domains.pricing.rules import PriceBook, PricingError, VolumeTier


@dataclass(frozen=True)
class Segment:
    country: str
    count: int
    region: str | None = None  # issue 36: a static order's place, as geo keys (core/place_names.py)
    city: str | None = None


SegmentInput = Segment | tuple[str, int]


@dataclass(frozen=True)
class QuoteLine:
    country: str
    count: int
    list_unit_cents: int  # base price per IP per month
    unit_price_cents: int  # per IP per month after the volume tier, before partner and term discounts
    volume_discount_cents: int  # per month
    retail_monthly_cents: int
    partner_discount_monthly_cents: int
    monthly_cents: int
    term_discount_cents: int  # over the period
    total_cents: int  # over the period
    retail_term_discount_cents: int
    retail_total_cents: int
    region: str | None = None  # the segment's place (geo keys), if it named one
    city: str | None = None

    @property
    def gross_monthly_cents(self) -> int:
        return self.list_unit_cents * self.count

    @property
    def partner_discount_cents(self) -> int:
        """Partner discount over the whole period."""
        return self.retail_total_cents - self.total_cents


@dataclass(frozen=True)
class Quote:
    product_kind: str
    period_months: int
    tier: VolumeTier
    term_discount_percent: int
    partner_discount_percent: int
    lines: tuple[QuoteLine, ...]

    def _sum(self, name: str) -> int:
        return sum(getattr(line, name) for line in self.lines)

    @property
    def ip_count(self) -> int:
        return self._sum("count")

    @property
    def gross_monthly_cents(self) -> int:
        return self._sum("gross_monthly_cents")

    @property
    def volume_discount_cents(self) -> int:
        return self._sum("volume_discount_cents")

    @property
    def retail_monthly_cents(self) -> int:
        return self._sum("retail_monthly_cents")

    @property
    def partner_discount_monthly_cents(self) -> int:
        return self._sum("partner_discount_monthly_cents")

    @property
    def monthly_cents(self) -> int:
        return self._sum("monthly_cents")

    @property
    def term_discount_cents(self) -> int:
        return self._sum("term_discount_cents")

    @property
    def total_cents(self) -> int:
        return self._sum("total_cents")

    @property
    def retail_term_discount_cents(self) -> int:
        return self._sum("retail_term_discount_cents")

    @property
    def retail_total_cents(self) -> int:
        return self._sum("retail_total_cents")

    @property
    def partner_discount_cents(self) -> int:
        return self._sum("partner_discount_cents")


def _segments(segments: Iterable[SegmentInput]) -> tuple[Segment, ...]:
    result = []
    for seg in segments:
        if isinstance(seg, Segment):
            country, count, region, city = seg.country, seg.count, seg.region, seg.city
        else:
            (country, count), region, city = seg, None, None
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise PricingError(f"segment {country}: count must be a positive integer, got {count!r}")
        result.append(Segment(country, count, region, city))
    if not result:
        raise PricingError("at least one segment is required")
    return tuple(result)


def _check_percent(name: str, percent: int) -> None:
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise PricingError(f"{name} must be an integer 0..100, got {percent!r}")


def quote_lines(
    pricebook: PriceBook,
    segments: Iterable[SegmentInput],
    period_months: int,
    partner_discount_percent: int = 0,
    *,
    tier_ip_count: int | None = None,
) -> Quote:
    """Price `segments` for `period_months`. The volume tier follows the total IP count of all
    segments, or `tier_ip_count` when given (adding IPs to a service prices them at the tier of
    the service's new total). Lines keep the order and the grouping of the input segments."""
    segs = _segments(segments)
    _check_percent("partner_discount_percent", partner_discount_percent)
    term_percent = pricebook.term_discount_percent(period_months)
    tier = pricebook.tier_for(sum(s.count for s in segs) if tier_ip_count is None else tier_ip_count)
    lines = []
    for seg in segs:
        retail_monthly = tier.unit_price_cents * seg.count
        partner_monthly = percent_of(retail_monthly, partner_discount_percent)
        monthly = retail_monthly - partner_monthly
        term_discount = percent_of(monthly * period_months, term_percent)
        retail_term_discount = percent_of(retail_monthly * period_months, term_percent)
        lines.append(
            QuoteLine(
                country=seg.country,
                count=seg.count,
                list_unit_cents=pricebook.base_price_cents,
                unit_price_cents=tier.unit_price_cents,
                volume_discount_cents=(pricebook.base_price_cents - tier.unit_price_cents) * seg.count,
                retail_monthly_cents=retail_monthly,
                partner_discount_monthly_cents=partner_monthly,
                monthly_cents=monthly,
                term_discount_cents=term_discount,
                total_cents=monthly * period_months - term_discount,
                retail_term_discount_cents=retail_term_discount,
                retail_total_cents=retail_monthly * period_months - retail_term_discount,
                region=seg.region,
                city=seg.city,
            )
        )
    return Quote(
        product_kind=pricebook.product_kind,
        period_months=period_months,
        tier=tier,
        term_discount_percent=term_percent,
        partner_discount_percent=partner_discount_percent,
        lines=tuple(lines),
    )


@dataclass(frozen=True)
class BelowMinimum:
    """An order under its book's minimum: the minimum (IPs and retail cents a month) and the order's
    own amount, with a message naming both."""

    minimum_ips: int
    minimum_monthly_cents: int
    ip_count: int
    monthly_cents: int
    message: str


def order_minimum(pricebook: PriceBook, quote: Quote) -> BelowMinimum | None:
    """Why `quote` is below the order minimum, or None. The cents minimum compares with the retail
    monthly total (after the volume discount, before partner and term discounts)."""
    if quote.ip_count < pricebook.min_order_ips:
        message = f"the minimum order is {pricebook.min_order_ips} IPs, this order has {quote.ip_count}"
    elif quote.retail_monthly_cents < pricebook.min_order_cents:
        message = (
            f"the minimum order is {pricebook.min_order_cents} cents a month, "
            f"this order comes to {quote.retail_monthly_cents} cents a month"
        )
    else:
        return None
    return BelowMinimum(
        minimum_ips=pricebook.min_order_ips,
        minimum_monthly_cents=pricebook.min_order_cents,
        ip_count=quote.ip_count,
        monthly_cents=quote.retail_monthly_cents,
        message=message,
    )


def order_minimum_error(pricebook: PriceBook, quote: Quote) -> str | None:
    below = order_minimum(pricebook, quote)
    return below.message if below else None


def merge_segments(segments: Iterable[SegmentInput]) -> list[Segment]:
    """Sum counts per place (country, region, city), keeping the order of first appearance."""
    counts: dict[tuple[str, str | None, str | None], int] = {}
    for seg in _segments(segments):
        key = (seg.country, seg.region, seg.city)
        counts[key] = counts.get(key, 0) + seg.count
    return [Segment(country, count, region, city) for (country, region, city), count in counts.items()]


@dataclass(frozen=True)
class AddIpsQuote:
    added: Quote  # the added IPs for a whole term, at the tier of the service's new total
    renewal: Quote  # the whole service after the addition, merged per country
    charge_cents: int  # `added.total_cents` prorated over the rest of the current term


def quote_add_ips(
    pricebook: PriceBook,
    existing: Sequence[SegmentInput],
    added: Sequence[SegmentInput],
    period_months: int,
    period_start: datetime,
    period_end: datetime,
    at: datetime,
    partner_discount_percent: int = 0,
) -> AddIpsQuote:
    """Charge for adding IPs mid-term (rest of the current term) and the service's new renewal price."""
    merged = merge_segments([*existing, *added])
    new_total = sum(s.count for s in merged)
    added_quote = quote_lines(
        pricebook, added, period_months, partner_discount_percent, tier_ip_count=new_total
    )
    renewal = quote_lines(pricebook, merged, period_months, partner_discount_percent)
    charge = prorate(added_quote.total_cents, period_start, period_end, at)
    return AddIpsQuote(added=added_quote, renewal=renewal, charge_cents=charge)


def addon_monthly_cents(
    pricebook: PriceBook,
    kind: str,
    *,
    ip_count: int,
    quantity: int = 1,
    partner_discount_percent: int = 0,
) -> int:
    """Monthly price of an add-on: per IP of the service, or per unit (quantity units of unit_size).
    Add-ons get the partner discount, never a term discount."""
    addon = pricebook.addon(kind)
    if ip_count < 1 or quantity < 1:
        raise PricingError("ip_count and quantity must be at least 1")
    _check_percent("partner_discount_percent", partner_discount_percent)
    gross = addon.monthly_cents * (ip_count if addon.per == "ip" else quantity)
    return gross - percent_of(gross, partner_discount_percent)


def addon_charge_cents(
    pricebook: PriceBook,
    kind: str,
    *,
    ip_count: int,
    quantity: int = 1,
    period_months: int,
    period_start: datetime,
    period_end: datetime,
    at: datetime,
    partner_discount_percent: int = 0,
) -> int:
    """What buying an add-on at `at` costs: its price for the service's term, prorated to the term's rest."""
    pricebook.term_discount_percent(period_months)  # validates the period
    monthly = addon_monthly_cents(
        pricebook,
        kind,
        ip_count=ip_count,
        quantity=quantity,
        partner_discount_percent=partner_discount_percent,
    )
    return prorate(monthly * period_months, period_start, period_end, at)


def refresh_price_cents(pricebook: PriceBook, ip_count: int, partner_discount_percent: int = 0) -> int:
    """Price of a paid (off-cycle) refresh of `ip_count` IPs."""
    if ip_count < 1:
        raise PricingError("ip_count must be at least 1")
    _check_percent("partner_discount_percent", partner_discount_percent)
    gross = pricebook.refresh_price_cents_per_ip * ip_count
    return gross - percent_of(gross, partner_discount_percent)


def pricing_info(pricebook: PriceBook) -> dict[str, Any]:
    """Display form for pricing-info: the dict form plus each tier's max_ips (None for the last)
    and its discount off the base price in basis points (1/100 of a percent, rounded half up)."""
    info = pricebook.to_dict()
    tiers = pricebook.volume_tiers
    base = pricebook.base_price_cents
    info["volume_tiers"] = [
        {
            "min_ips": tier.min_ips,
            "max_ips": tiers[i + 1].min_ips - 1 if i + 1 < len(tiers) else None,
            "unit_price_cents": tier.unit_price_cents,
            "discount_basis_points": (
                round_half_up((base - tier.unit_price_cents) * 10000, base) if base else 0
            ),
        }
        for i, tier in enumerate(tiers)
    ]
    return info
