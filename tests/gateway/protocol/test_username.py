import pytest

from proxyplane.gateway.protocol.username import (
    TTL_MAX_MINUTES,
    UsernameError,
    UsernameOptions,
    geo_key,
    parse_ttl,
    parse_username,
)


def test_plain_login():
    opts = parse_username("alice")
    assert opts == UsernameOptions("alice") and not opts.has_options and not opts.targets_place


def test_all_options():
    expected = UsernameOptions("login", "abc123", 10, "de")
    assert parse_username("login-session-abc123-ttl-10m-country-de") == expected
    assert parse_username("login-sid-x_1-ttl-15-country-US") == UsernameOptions("login", "x_1", 15, "us")


def test_targeting_options():
    opts = parse_username("u-country-US-state-CA-city-New_York-asn-AS13335-session-s1-ttl-24h-strict-1")
    assert opts == UsernameOptions("u", "s1", 24 * 60, "us", "ca", "newyork", 13335, True)
    assert opts.targets_place and opts.has_options
    assert parse_username("u-asn-64496") == UsernameOptions("u", asn=64496)
    assert parse_username("u-country-br-city-sao_paulo").city == geo_key("São Paulo") == "saopaulo"
    expected = UsernameOptions("u", country="de", region="bavaria")
    assert parse_username("u-region-bavaria-country-de") == expected
    assert parse_username("u-strict-no-session-a").strict is False
    assert parse_username("u-strict-yes").has_options


@pytest.mark.parametrize(
    "text,minutes", [("1", 1), ("1m", 1), ("30m", 30), ("90", 90), ("2h", 120), ("24h", 1440), ("1d", 1440)]
)
def test_ttl_units(text, minutes):
    assert parse_ttl(text) == minutes
    assert parse_username(f"u-ttl-{text}").ttl_minutes == minutes


@pytest.mark.parametrize(
    "username,option",
    [
        ("login-ttl-0m", "ttl"),
        ("login-ttl-25h", "ttl"),
        ("login-ttl-1441", "ttl"),
        ("login-ttl-2d", "ttl"),
        ("login-ttl-10s", "ttl"),
        ("login-ttl-abc", "ttl"),
        ("login-country-xx", "country"),
        ("login-country-deu", "country"),
        ("login-color-red", "color"),
        ("login-session-a.b", "session"),
        ("login-session-a-session-b", "session"),
        ("login-sid-a-session-b", "session"),
        ("login-session", "session"),
        ("login-ttl-", "ttl"),
        ("-session-a", "login"),
        ("login-city-berlin", "city"),
        ("login-region-bavaria", "region"),
        ("login-state-ca", "state"),
        ("login-country-de-city-b%rlin", "city"),
        ("login-country-de-city-__", "city"),
        ("login-asn-0", "asn"),
        ("login-asn-as", "asn"),
        ("login-asn-4294967296", "asn"),
        ("login-strict-maybe", "strict"),
    ],
)
def test_bad_options_name_the_option(username, option):
    with pytest.raises(UsernameError) as info:
        parse_username(username)
    assert info.value.option == option
    assert f"'{option}'" in str(info.value)
    assert info.value.status == 407


def test_ttl_bound_is_a_day():
    assert TTL_MAX_MINUTES == 1440
    with pytest.raises(UsernameError, match="24 hours"):
        parse_ttl("1441m")
