from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxyplane.domains.pricing import prorate, refund_unused

START = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)

amounts = st.integers(min_value=0, max_value=10**9)
term_days = st.sampled_from([28, 29, 30, 31, 90, 91, 92, 181, 182, 184, 365, 366])
offsets = st.integers(min_value=-10 * 86400 * 10**6, max_value=400 * 86400 * 10**6).map(
    lambda us: timedelta(microseconds=us)
)


@given(amounts, term_days, offsets)
def test_refund_is_between_zero_and_paid_and_used_makes_up_the_rest(paid, days, offset):
    end = START + timedelta(days=days)
    refund = refund_unused(paid, START, end, START + offset)
    used = paid - refund
    assert 0 <= refund <= paid
    assert 0 <= used <= paid
    assert refund + used == paid


@given(amounts, term_days, offsets, offsets)
def test_proration_never_increases_with_time(amount, days, a, b):
    end = START + timedelta(days=days)
    early, late = sorted([a, b])
    assert prorate(amount, START, end, START + early) >= prorate(amount, START, end, START + late)


@given(amounts, term_days, st.integers(min_value=0, max_value=400), st.integers(0, 86400 - 1))
def test_same_day_gives_same_amount(amount, days, day, second):
    end = START + timedelta(days=days)
    first_moment = START + timedelta(days=day, microseconds=1)
    later_same_day = START + timedelta(days=day, seconds=second, microseconds=1)
    assert prorate(amount, START, end, first_moment) == prorate(amount, START, end, later_same_day)


@given(amounts, term_days)
def test_full_before_start_and_zero_from_end(amount, days):
    end = START + timedelta(days=days)
    assert prorate(amount, START, end, START) == amount
    assert prorate(amount, START, end, START - timedelta(days=3)) == amount
    assert prorate(amount, START, end, end) == 0
    assert prorate(amount, START, end, end + timedelta(seconds=1)) == 0


@pytest.mark.parametrize(
    ("paid", "elapsed", "expected"),
    [
        (3000, timedelta(0), 3000),  # cancelled at the start: everything back
        (3000, timedelta(hours=1), 2900),  # the started day is used: 29/30
        (3000, timedelta(days=10, hours=12), 1900),  # 11 days used, 19/30 back
        (1000, timedelta(days=1), 967),  # 1000 * 29/30 = 966.67 -> 967
        (1000, timedelta(days=14), 533),  # 1000 * 16/30 = 533.33 -> 533
        (1, timedelta(days=15), 1),  # 0.5 -> 1 (half up)
        (1, timedelta(days=16), 0),  # 0.47 -> 0
        (3000, timedelta(days=29, hours=23), 0),
    ],
)
def test_refund_table_for_a_30_day_term(paid, elapsed, expected):
    end = START + timedelta(days=30)
    assert refund_unused(paid, START, end, START + elapsed) == expected


def test_bad_arguments():
    with pytest.raises(ValueError):
        prorate(-1, START, START + timedelta(days=1), START)
    with pytest.raises(ValueError):
        prorate(100, START, START, START)
    with pytest.raises(TypeError):
        prorate(100, START, START + timedelta(days=1), datetime(2026, 1, 1))
