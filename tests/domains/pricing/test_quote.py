from datetime import UTC, datetime, timedelta
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyplane.domains.pricing import (
    DEFAULT_PRICEBOOKS,
    PRODUCT_KINDS,
    PricingError,
    Segment,
    addon_charge_cents,
    addon_monthly_cents,
    order_minimum_error,
    quote_add_ips,
    quote_lines,
    refresh_price_cents,
)

books = st.sampled_from(PRODUCT_KINDS).map(DEFAULT_PRICEBOOKS.__getitem__)
countries = st.sampled_from(["US", "DE", "NL", "GB", "FR", "JP", "RU", "UA"])
segment_lists = st.lists(
    st.tuples(countries, st.integers(min_value=1, max_value=2000)), min_size=1, max_size=8
)
periods = st.sampled_from([1, 3, 6, 12])
percents = st.integers(min_value=0, max_value=100)


@given(books, segment_lists, periods, percents)
def test_totals_are_sums_of_lines(book, segments, months, partner):
    quote = quote_lines(book, segments, months, partner)
    assert len(quote.lines) == len(segments)
    assert quote.ip_count == sum(count for _, count in segments)
    assert quote.total_cents == sum(line.total_cents for line in quote.lines)
    assert quote.monthly_cents == sum(line.monthly_cents for line in quote.lines)
    assert quote.retail_total_cents == sum(line.retail_total_cents for line in quote.lines)
    assert quote.volume_discount_cents == sum(line.volume_discount_cents for line in quote.lines)
    assert quote.partner_discount_cents == quote.retail_total_cents - quote.total_cents
    assert quote.gross_monthly_cents - quote.volume_discount_cents == quote.retail_monthly_cents


@given(books, segment_lists, periods, percents)
def test_each_line_follows_the_documented_steps(book, segments, months, partner):
    quote = quote_lines(book, segments, months, partner)
    tier = book.tier_for(quote.ip_count)
    for line, (country, count) in zip(quote.lines, segments, strict=True):
        assert (line.country, line.count) == (country, count)
        assert line.unit_price_cents == tier.unit_price_cents
        assert line.retail_monthly_cents == tier.unit_price_cents * count
        assert line.monthly_cents == line.retail_monthly_cents - line.partner_discount_monthly_cents
        assert line.total_cents == line.monthly_cents * months - line.term_discount_cents
        assert line.retail_total_cents == line.retail_monthly_cents * months - line.retail_term_discount_cents
        assert 0 <= line.total_cents <= line.retail_total_cents <= line.gross_monthly_cents * months
        # two roundings (partner per month, term per period), each at most half a cent
        exact = (
            Fraction(tier.unit_price_cents * count * months)
            * (1 - Fraction(partner, 100))
            * (1 - Fraction(quote.term_discount_percent, 100))
        )
        assert abs(line.total_cents - exact) <= Fraction(months + 1, 2)


@given(books, segment_lists, percents)
def test_a_longer_term_never_costs_less_in_total_nor_more_per_month(book, segments, partner):
    totals = [quote_lines(book, segments, m, partner).total_cents for m in (1, 3, 6, 12)]
    assert totals == sorted(totals)
    per_month = [Fraction(t, m) for t, m in zip(totals, (1, 3, 6, 12), strict=True)]
    assert per_month == sorted(per_month, reverse=True)


@given(books, segment_lists, periods, percents, percents)
def test_a_bigger_partner_discount_never_costs_more(book, segments, months, p1, p2):
    low, high = sorted([p1, p2])
    assert (
        quote_lines(book, segments, months, high).total_cents
        <= quote_lines(book, segments, months, low).total_cents
    )


def test_worked_example():
    # 55 datacenter IPs -> tier 50+ at 11 cents; 10 % partner; 3 months at 5 % off
    quote = quote_lines(DEFAULT_PRICEBOOKS["proxy_datacenter"], [("US", 30), Segment("DE", 25)], 3, 10)
    us, de = quote.lines
    assert (us.retail_monthly_cents, us.partner_discount_monthly_cents, us.monthly_cents) == (330, 33, 297)
    assert (us.term_discount_cents, us.total_cents) == (45, 846)  # 891 * 5 % = 44.55 -> 45
    assert (de.retail_monthly_cents, de.partner_discount_monthly_cents, de.monthly_cents) == (275, 28, 247)
    assert (de.term_discount_cents, de.total_cents) == (37, 704)  # 27.5 -> 28; 741 * 5 % = 37.05 -> 37
    assert quote.volume_discount_cents == 55 * 4
    assert (quote.monthly_cents, quote.total_cents) == (544, 1550)
    assert (quote.retail_total_cents, quote.partner_discount_cents) == (1724, 174)


def test_without_partner_discount_retail_equals_price():
    quote = quote_lines(DEFAULT_PRICEBOOKS["proxy_personal"], [("NL", 3)], 12)
    assert quote.total_cents == quote.retail_total_cents == 300 * 3 * 12 * 85 // 100
    assert quote.partner_discount_cents == 0


@pytest.mark.parametrize(
    ("segments", "months", "partner"),
    [([], 1, 0), ([("US", 0)], 1, 0), ([("US", -3)], 1, 0), ([("US", 1)], 2, 0), ([("US", 1)], 1, 101)],
)
def test_unpriceable_requests(segments, months, partner):
    with pytest.raises(PricingError):
        quote_lines(DEFAULT_PRICEBOOKS["proxy_isp"], segments, months, partner)


def test_order_minimum_uses_the_retail_monthly_total():
    book = DEFAULT_PRICEBOOKS["proxy_datacenter"]  # minimum 100 cents a month
    assert "100 cents" in (order_minimum_error(book, quote_lines(book, [("US", 6)], 12)) or "")
    assert order_minimum_error(book, quote_lines(book, [("US", 7)], 1)) is None
    assert order_minimum_error(book, quote_lines(book, [("US", 7)], 1, partner_discount_percent=50)) is None


START = datetime(2026, 3, 1, tzinfo=UTC)
END = datetime(2026, 3, 31, tzinfo=UTC)


def test_added_ips_are_priced_at_the_tier_of_the_new_total():
    book = DEFAULT_PRICEBOOKS["proxy_datacenter"]
    result = quote_add_ips(book, [("US", 9)], [("US", 1), ("DE", 5)], 1, START, END, START)
    assert result.added.tier.unit_price_cents == 13
    assert result.added.total_cents == 6 * 13
    assert result.charge_cents == 78  # at the start of the term: the full term price
    assert [(line.country, line.count) for line in result.renewal.lines] == [("US", 10), ("DE", 5)]
    assert result.renewal.total_cents == 15 * 13
    halfway = quote_add_ips(
        book, [("US", 9)], [("US", 1), ("DE", 5)], 1, START, END, START + timedelta(days=15)
    )
    assert halfway.charge_cents == 39


@given(books, segment_lists, segment_lists, periods, st.integers(min_value=0, max_value=40 * 86400))
def test_add_ips_charge_is_at_most_the_full_term_price(book, existing, added, months, seconds):
    result = quote_add_ips(book, existing, added, months, START, END, START + timedelta(seconds=seconds))
    assert 0 <= result.charge_cents <= result.added.total_cents
    assert result.renewal.ip_count == result.added.ip_count + sum(c for _, c in existing)


def test_addon_and_refresh_prices():
    book = DEFAULT_PRICEBOOKS["proxy_isp"]
    assert addon_monthly_cents(book, "udp", ip_count=20) == 200
    assert addon_monthly_cents(book, "extra_connections", ip_count=20, quantity=3) == 450
    assert addon_monthly_cents(book, "extra_whitelist_slots", ip_count=20, quantity=2) == 100
    assert addon_monthly_cents(book, "udp", ip_count=20, partner_discount_percent=15) == 170
    full = addon_charge_cents(
        book, "udp", ip_count=20, period_months=1, period_start=START, period_end=END, at=START
    )
    assert full == 200
    half = addon_charge_cents(
        book,
        "udp",
        ip_count=20,
        period_months=1,
        period_start=START,
        period_end=END,
        at=START + timedelta(days=15),
    )
    assert half == 100
    assert refresh_price_cents(book, 4) == 60
    assert refresh_price_cents(book, 4, partner_discount_percent=10) == 54
    with pytest.raises(PricingError):
        addon_monthly_cents(book, "teleport", ip_count=1)
