import json

import pytest

from proxyplane.domains.pricing import (
    DEFAULT_PRICEBOOKS,
    PRODUCT_KINDS,
    PriceBook,
    PriceBookError,
    PricingError,
    pricebook_with_overrides,
    pricebooks_from_dict,
    pricing_info,
)


def test_defaults_cover_every_product_kind():
    assert set(DEFAULT_PRICEBOOKS) == set(PRODUCT_KINDS)
    for kind, book in DEFAULT_PRICEBOOKS.items():
        assert book.product_kind == kind
        assert book.allowed_periods == (1, 3, 6, 12)
        assert {a.kind for a in book.addons} == {"udp", "extra_whitelist_slots", "extra_connections"}


@pytest.mark.parametrize("kind", PRODUCT_KINDS)
def test_dict_form_round_trips_through_json(kind):
    book = DEFAULT_PRICEBOOKS[kind]
    assert PriceBook.from_dict(json.loads(json.dumps(book.to_dict()))) == book


def test_tier_boundaries():
    book = DEFAULT_PRICEBOOKS["proxy_datacenter"]
    assert [book.tier_for(n).min_ips for n in (1, 9, 10, 49, 50, 99, 100, 499, 500, 10**6)] == [
        1,
        1,
        10,
        10,
        50,
        50,
        100,
        100,
        500,
        500,
    ]
    with pytest.raises(PricingError):
        book.tier_for(0)


def test_unknown_period_is_a_pricing_error():
    with pytest.raises(PricingError, match="1, 3, 6, 12"):
        DEFAULT_PRICEBOOKS["proxy_isp"].term_discount_percent(2)


def test_from_dict_rejects_unknown_and_missing_keys():
    data = DEFAULT_PRICEBOOKS["proxy_isp"].to_dict()
    with pytest.raises(PriceBookError, match="unknown"):
        PriceBook.from_dict({**data, "base_price": 1})
    del data["min_order_ips"]
    with pytest.raises(PriceBookError, match="missing"):
        PriceBook.from_dict(data)


@pytest.mark.parametrize(
    "overrides",
    [
        {"base_price_cents": 1.5},
        {"base_price_cents": True},
        {"volume_tiers": [{"min_ips": 2, "unit_price_cents": 10}]},
        {"volume_tiers": [{"min_ips": 1, "unit_price_cents": 10}, {"min_ips": 5, "unit_price_cents": 11}]},
        {"volume_tiers": [{"min_ips": 1, "unit_price_cents": 10}, {"min_ips": 1, "unit_price_cents": 9}]},
        {"term_discounts": [{"months": 3, "percent": 5}]},
        {"term_discounts": [{"months": 1, "percent": 0}, {"months": 3, "percent": 100}]},
        {"addons": [{"kind": "teleport", "monthly_cents": 1, "per": "ip"}]},
        {"addons": [{"kind": "udp", "monthly_cents": 1, "per": "month"}]},
        {"min_order_cents": -1},
        {"product_kind": "proxy_mobile"},
    ],
)
def test_invalid_price_books_are_rejected(overrides):
    with pytest.raises(PriceBookError):
        pricebook_with_overrides(DEFAULT_PRICEBOOKS["proxy_datacenter"], overrides)


def test_operator_overrides_layer_over_defaults():
    books = pricebooks_from_dict({"proxy_isp": {"min_order_ips": 5, "included_connections_per_ip": 300}})
    assert books["proxy_isp"].min_order_ips == 5
    assert books["proxy_isp"].included_connections_per_ip == 300
    assert books["proxy_isp"].volume_tiers == DEFAULT_PRICEBOOKS["proxy_isp"].volume_tiers
    assert books["proxy_datacenter"] == DEFAULT_PRICEBOOKS["proxy_datacenter"]
    with pytest.raises(PriceBookError):
        pricebooks_from_dict({"proxy_mobile": {}})


def test_pricing_info_shows_tier_ranges_and_discounts():
    tiers = pricing_info(DEFAULT_PRICEBOOKS["proxy_datacenter"])["volume_tiers"]
    assert [(t["min_ips"], t["max_ips"]) for t in tiers] == [
        (1, 9),
        (10, 49),
        (50, 99),
        (100, 499),
        (500, None),
    ]
    # 15 -> 13 cents is 13.33 % off; 15 -> 7 cents is 53.33 % off
    assert [t["discount_basis_points"] for t in tiers] == [0, 1333, 2667, 4000, 5333]
