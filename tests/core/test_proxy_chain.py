"""The supplier username template and handshake framing (core/proxy_chain.py, issue 36.4)."""

from __future__ import annotations

import pytest

from proxyplane.core.proxy_chain import (
    Hop,
    HopFailed,
    TemplateError,
    connect_reply,
    connect_request,
    parse_template,
    session_token,
    socks_reply_length,
    socks_request,
)


def test_groups_are_dropped_when_a_field_has_no_value() -> None:
    t = parse_template("{user}[-country-{country}][-session-{session}-sesstime-{ttl}]")
    assert t.fields == {"user", "country", "session", "ttl"}
    assert t.render({"user": "acct"}) == "acct"
    assert t.render({"user": "acct", "country": "de"}) == "acct-country-de"
    assert t.render({"user": "acct", "session": "s1"}) == "acct"  # ttl missing: the whole group goes
    assert t.render({"user": "acct", "country": "us", "session": "s1", "ttl": "30"}) == (
        "acct-country-us-session-s1-sesstime-30")


@pytest.mark.parametrize(("source", "field"), [
    ("{user}[-zip-{zip}]", "zip"),
    ("{user}-country-{country}", "country"),  # outside a group: not every connection has one
    ("{customer}", "customer"),
])
def test_unknown_or_ungrouped_fields_are_refused_naming_them(source: str, field: str) -> None:
    with pytest.raises(TemplateError) as err:
        parse_template(source)
    assert err.value.field == field and f"{{{field}}}" in str(err.value)


@pytest.mark.parametrize("source", ["", "{user", "[{country}", "{user}]", "[[{country}]]", "{user} x"])
def test_malformed_templates_are_refused(source: str) -> None:
    with pytest.raises(TemplateError):
        parse_template(source)


def test_session_token_is_per_service_and_not_the_customers_text() -> None:
    a, b = session_token("svc-a", "s1"), session_token("svc-b", "s1")
    assert a != b and len(a) == 16 and "s1" not in a and a == session_token("svc-a", "s1")


def test_connect_request_and_reply_framing() -> None:
    head = connect_request(Hop("http", "127.0.0.1", 1, "u", "p"), "::1", 443)
    assert head.startswith(b"CONNECT [::1]:443 HTTP/1.1\r\n") and b"Proxy-Authorization: Basic dTpw" in head
    assert connect_reply(b"HTTP/1.1 200 OK\r\n") is None
    assert connect_reply(b"HTTP/1.1 407 Auth\r\nX: y\r\n\r\nrest") == (407, 27)
    with pytest.raises(HopFailed):
        connect_reply(b"SSH-2.0\r\n\r\n")


def test_socks_request_and_reply_lengths() -> None:
    assert socks_request("127.0.0.1", 80) == b"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50"
    assert socks_request("example.com", 443)[3:5] == b"\x03\x0b"
    assert socks_reply_length(b"\x05\x00\x00\x01\x00") is None
    assert socks_reply_length(b"\x05\x00\x00\x01" + bytes(6)) == 10
    assert socks_reply_length(b"\x05\x00\x00\x03\x03abc\x00\x01") == 10
