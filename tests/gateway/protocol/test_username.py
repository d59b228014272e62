import pytest

from proxyplane.gateway.protocol.username import UsernameError, UsernameOptions, parse_username


def test_plain_login():
    opts = parse_username("alice")
    assert opts == UsernameOptions("alice") and not opts.has_options


def test_all_options():
    expected = UsernameOptions("login", "abc123", 10, "de")
    assert parse_username("login-session-abc123-ttl-10m-country-de") == expected
    assert parse_username("login-sid-x_1-ttl-15-country-US") == UsernameOptions("login", "x_1", 15, "us")


@pytest.mark.parametrize(
    "username,option",
    [
        ("login-ttl-7m", "ttl"),
        ("login-ttl-abc", "ttl"),
        ("login-country-xx", "country"),
        ("login-country-deu", "country"),
        ("login-color-red", "color"),
        ("login-session-a.b", "session"),
        ("login-session-a-session-b", "session"),
        ("login-session", "session"),
        ("login-ttl-", "ttl"),
        ("-session-a", "login"),
    ],
)
def test_bad_options_name_the_option(username, option):
    with pytest.raises(UsernameError) as info:
        parse_username(username)
    assert info.value.option == option
    assert f"'{option}'" in str(info.value)
