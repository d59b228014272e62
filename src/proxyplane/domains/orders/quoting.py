"""Pricing of composite orders: a quote and an order with the same input price the same
(`quote_segments` over the same price book); `price` lists what cannot be fulfilled; `check_whitelist`
normalises the whitelist."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.orders import places
from proxyplane.domains.pricing import (
    PriceBook,
    PricingError,
    Quote,
    Segment,
    merge_segments,
    order_minimum,
    quote_lines,
)
from proxyplane.domains.pricing.store import load_pricebook
from proxyplane.domains.stock import service as stock
from proxyplane.domains.stock.countries import COUNTRIES


@dataclass(frozen=True)
class SegmentError:
    country: str | None
    requested: int
    available: int
    message: str
    error: str = "unknown_country"  # or insufficient_stock, order_below_minimum
    minimum_ips: int | None = None
    minimum_monthly_cents: int | None = None
    monthly_cents: int | None = None
    region: str | None = None  # a placed segment's (issue 36)
    city: str | None = None


@dataclass(frozen=True)
class Priced:
    quote: Quote
    errors: tuple[SegmentError, ...]
    availability: dict[str, int]
    included_connections_per_ip: int
    line_availability: dict[int, int] = field(default_factory=dict)  # placed lines, by index

    def available(self, index: int) -> int:
        line = self.quote.lines[index]
        return self.line_availability.get(index, self.availability.get(line.country, 0))


SegmentsIn = Sequence[tuple[str, int] | Segment]


def _upper(seg: tuple[str, int] | Segment) -> Segment:
    if isinstance(seg, Segment):
        return Segment(seg.country.strip().upper(), seg.count, seg.region, seg.city)
    return Segment(seg[0].strip().upper(), seg[1])


def quote_segments(book: PriceBook, segments: SegmentsIn, period_months: int, partner: int) -> Quote:
    try:
        merged = merge_segments([_upper(s) for s in segments])
        return quote_lines(book, merged, period_months, partner)
    except PricingError as exc:
        field = "period_months" if "period" in str(exc) else "segments"
        raise ValidationFailed(str(exc), field=field) from None


async def price(
    session: AsyncSession,
    product_kind: str,
    geo_source: str,
    period_months: int,
    segments: SegmentsIn,
    partner_discount_percent: int = 0,
    *,
    book: PriceBook | None = None,
) -> Priced:
    """Price segments (merged per place, first appearance order) and list what cannot be fulfilled.
    Raises ValidationFailed for an unknown kind / geo source / period or an empty or malformed list."""
    stock.check_pool(product_kind, geo_source)
    book = book or await load_pricebook(session, product_kind)
    quote = quote_segments(book, segments, period_months, partner_discount_percent)
    placed = await places.resolve(session, product_kind, geo_source, quote.lines)
    avail = await stock.availability(
        session, product_kind, geo_source, {line.country: line.count for line in quote.lines}
    )
    errors = []
    for i, seg in enumerate(quote.lines):
        have = avail.get(seg.country, 0)
        if seg.country not in COUNTRIES:
            errors.append(SegmentError(seg.country, seg.count, 0, f"unknown country code {seg.country!r}"))
        elif i in placed:
            if placed[i].available < seg.count:
                text = places.refusal(seg, placed[i], product_kind, geo_source)
                errors.append(SegmentError(seg.country, seg.count, placed[i].available, text,
                                           "insufficient_stock", region=seg.region, city=seg.city))
        elif have < seg.count:
            errors.append(
                SegmentError(
                    seg.country,
                    seg.count,
                    have,
                    f"only {have} {product_kind} IPs available in {seg.country} ({geo_source})",
                    "insufficient_stock",
                )
            )
    below = order_minimum(book, quote)
    if below:
        errors.append(
            SegmentError(
                None,
                quote.ip_count,
                0,
                below.message,
                "order_below_minimum",
                below.minimum_ips,
                below.minimum_monthly_cents,
                below.monthly_cents,
            )
        )
    line_avail = {i: p.available for i, p in placed.items()}
    return Priced(quote, tuple(errors), avail, book.included_connections_per_ip, line_avail)


def check_whitelist(ips: Sequence[str] | None) -> list[str]:
    """Single IPv4 addresses only (no CIDR, no IPv6), at least one; normalised, de-duplicated."""
    if not ips:
        raise ValidationFailed("whitelist_ips must list at least one IPv4 address", field="whitelist_ips")
    out: list[str] = []
    for raw in ips:
        text = raw.strip()
        if "/" in text:
            raise ValidationFailed(
                f"whitelist entry {raw!r} is a subnet; only single IPv4 addresses are allowed",
                field="whitelist_ips",
            )
        try:
            addr = ipaddress.IPv4Address(text)
        except ValueError:
            raise ValidationFailed(
                f"whitelist entry {raw!r} is not an IPv4 address", field="whitelist_ips"
            ) from None
        if str(addr) not in out:
            out.append(str(addr))
    return out
