import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from proxyplane.domains.stock.autoplan import AutoPlanError, InsufficientStock, auto_plan

codes = st.sampled_from(["US", "DE", "NL", "GB", "FR", "JP", "RU", "UA", "PL", "BR", "SG", "CA"])
stocks = st.dictionaries(codes, st.integers(min_value=0, max_value=5000), max_size=12)


@given(stocks, st.sets(codes, max_size=4), st.integers(min_value=1, max_value=20000))
def test_plan_sums_to_total_within_stock_and_skips_excluded(availability, excluded, total):
    in_stock = sum(n for code, n in availability.items() if code not in excluded)
    assume(total <= in_stock)
    plan = auto_plan(total, availability, excluded)
    assert sum(count for _, count in plan) == total
    assert len({code for code, _ in plan}) == len(plan)
    for code, count in plan:
        assert 0 < count <= availability[code]
        assert code not in excluded


@given(stocks, st.sets(codes, max_size=4), st.integers(min_value=1, max_value=20000))
def test_plan_is_deterministic_and_ordered_by_availability(availability, excluded, total):
    assume(total <= sum(n for code, n in availability.items() if code not in excluded))
    plan = auto_plan(total, availability, excluded)
    reversed_input = dict(reversed(list(availability.items())))
    assert auto_plan(total, reversed_input, excluded) == plan
    keys = [(-availability[code], code) for code, _ in plan]
    assert keys == sorted(keys)


@given(stocks, st.sets(codes, max_size=4), st.integers(min_value=1, max_value=20000))
def test_shortage_raises_with_the_numbers(availability, excluded, total):
    in_stock = sum(n for code, n in availability.items() if code not in excluded)
    assume(total > in_stock)
    with pytest.raises(InsufficientStock) as info:
        auto_plan(total, availability, excluded)
    assert (info.value.requested, info.value.available) == (total, in_stock)


@given(stocks, st.integers(min_value=1, max_value=20000))
def test_shares_are_proportional_within_one_ip(availability, total):
    pool = sum(availability.values())
    assume(0 < total <= pool)
    planned = dict(auto_plan(total, availability))
    for code, available in availability.items():
        exact = total * available / pool
        assert abs(planned.get(code, 0) - exact) < 1


def test_examples():
    stock = {"US": 100, "DE": 50, "NL": 50, "FR": 0}
    assert auto_plan(10, stock) == [("US", 5), ("DE", 3), ("NL", 2)]  # DE before NL on equal remainders
    assert auto_plan(200, stock) == [("US", 100), ("DE", 50), ("NL", 50)]
    assert auto_plan(10, stock, excluded=["us", "nl"]) == [("DE", 10)]
    with pytest.raises(InsufficientStock, match="requested 201, available 200"):
        auto_plan(201, stock)
    with pytest.raises(AutoPlanError):
        auto_plan(0, stock)
    with pytest.raises(AutoPlanError):
        auto_plan(1, {"US": -1})
