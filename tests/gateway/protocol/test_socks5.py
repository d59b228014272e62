import pytest

from proxyplane.gateway.protocol.errors import ProtocolError
from proxyplane.gateway.protocol.socks5 import (
    CMD_CONNECT,
    CMD_UDP_ASSOCIATE,
    NO_ACCEPTABLE,
    USERPASS,
    MethodsOffered,
    Socks5Parser,
    SocksRequest,
    UserPass,
)
from proxyplane.gateway.protocol.udp import build_udp_datagram, parse_udp_datagram


def test_userpass_connect_domain_byte_by_byte():
    p = Socks5Parser()
    convo = b"\x05\x02\x00\x02"
    events = []
    for b in convo:
        events += p.feed(bytes([b]))
    assert events == [MethodsOffered(frozenset({0, 2}))]
    assert p.choose_method(USERPASS) == b"\x05\x02"
    assert p.feed(b"\x01\x03bob\x06secret") == [UserPass("bob", "secret")]
    assert p.auth_result(True) == b"\x01\x00"
    req = b"\x05\x01\x00\x03\x09localhost\x00\x50"
    assert p.feed(req[:5]) == []
    assert p.feed(req[5:] + b"GET") == [SocksRequest(CMD_CONNECT, "localhost", 80, 3)]
    assert p.reply(0, "127.0.1.1", 4321) == b"\x05\x00\x00\x01\x7f\x00\x01\x01\x10\xe1"
    assert p.take_rest() == b"GET" and p.done


def test_ipv4_and_ipv6_requests_without_auth():
    p = Socks5Parser()
    p.feed(b"\x05\x01\x00")
    assert p.choose_method(0) == b"\x05\x00"
    assert p.feed(b"\x05\x01\x00\x01\x7f\x00\x00\x01\x1f\x90") == [SocksRequest(1, "127.0.0.1", 8080, 1)]
    q = Socks5Parser()
    q.feed(b"\x05\x01\x00")
    q.choose_method(0)
    ev = q.feed(b"\x05\x03\x00\x04" + bytes(15) + b"\x01\x00\x35")
    assert ev == [SocksRequest(CMD_UDP_ASSOCIATE, "::1", 53, 4)]
    assert q.reply(0, "::1", 53) == b"\x05\x00\x00\x04" + bytes(15) + b"\x01\x00\x35"


def test_auth_failure_and_no_acceptable_method():
    p = Socks5Parser()
    p.feed(b"\x05\x01\x02")
    p.choose_method(USERPASS)
    p.feed(b"\x01\x01a\x01b")
    assert p.auth_result(False) == b"\x01\x01" and p.done
    q = Socks5Parser()
    q.feed(b"\x05\x01\x00")
    assert q.choose_method(NO_ACCEPTABLE) == b"\x05\xff" and q.done


@pytest.mark.parametrize(
    "after_greeting,rep",
    [
        (b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", 7),  # BIND
        (b"\x05\x01\x00\x05\x00", 8),  # unknown ATYP
        (b"\x04\x01\x00\x01", 1),  # wrong version
        (b"\x05\x01\x00\x03\x03a b\x00\x50", 4),  # bad domain
    ],
)
def test_request_errors_have_reply_codes(after_greeting, rep):
    p = Socks5Parser()
    p.feed(b"\x05\x01\x00")
    p.choose_method(0)
    with pytest.raises(ProtocolError) as info:
        p.feed(after_greeting)
    assert p.error_reply(info.value)[:2] == bytes([5, rep])


def test_greeting_errors():
    with pytest.raises(ProtocolError):
        Socks5Parser().feed(b"\x04\x01\x00")
    with pytest.raises(ProtocolError):
        Socks5Parser().feed(b"\x05\x00")


def test_udp_header_roundtrip():
    for host in ("127.0.0.1", "::1", "localhost"):
        raw = build_udp_datagram(host, 5353, b"payload")
        d = parse_udp_datagram(raw)
        assert (d.frag, d.host, d.port, d.payload) == (0, host, 5353, b"payload")
    assert parse_udp_datagram(b"\x00\x00\x01\x01\x7f\x00\x00\x01\x00\x01x").frag == 1
    bad_datagrams = (b"\x00", b"\x01\x00\x00\x01\x7f\x00\x00\x01\x00\x01", b"\x00\x00\x00\x09",
                     b"\x00\x00\x00\x01\x7f")
    for bad in bad_datagrams:
        with pytest.raises(ProtocolError):
            parse_udp_datagram(bad)
