"""Targeted property tests of the Python parsers (hypothesis' ``target()`` steers generation towards inputs
that get further: more events, more requests framed). Properties beyond "raises only ProtocolError":

- how the bytes are split into reads changes nothing (same events, same error, same bytes left over for
  the tunnel), both for the SOCKS5 parser and for the HTTP request parser (whose head cache makes a whole
  request and a chunked one take different paths);
- a well-formed SOCKS5 conversation parses back to exactly the fields it was built from.

The C engine's framing of the same handshakes is fuzzed by scripts/fuzz.sh (docs/decisions/fuzzing.md)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings, target
from hypothesis import strategies as st

from proxyplane.gateway.protocol.errors import ProtocolError
from proxyplane.gateway.protocol.http_proxy import BodyData, ConnectRequest, EndOfRequest, HttpRequestParser
from proxyplane.gateway.protocol.socks5 import (
    NO_ACCEPTABLE,
    USERPASS,
    MethodsOffered,
    Socks5Parser,
    SocksRequest,
    UserPass,
)

SOCKS_PIECES = [
    b"\x05",
    b"\x01",
    b"\x02",
    b"\x00",
    b"\x03",
    b"\x04",
    b"\x05\x01\x02",
    b"\x05\x02\x00\x02",
    b"\x01\x03rot\x02pw",
    b"\x01\x00\x00",
    b"\x05\x01\x00\x01\x7f\x00\x00\x01\x1f\x90",
    b"\x05\x03\x00\x03\x09127.0.0.1\x00\x50",
    b"\x05\x01\x00\x04" + bytes(15) + b"\x01\x00\x50",
    b"\xff",
    b"\xc3\x28",
    b"GET / HTTP/1.1\r\n\r\n",
]
HTTP_PIECES = [
    b"GET ",
    b"CONNECT ",
    b"POST ",
    b"http://",
    b"127.0.0.1",
    b":8080",
    b"[::1]",
    b"/",
    b"/x",
    b" HTTP/1.1",
    b" HTTP/1.0",
    b"\r\n",
    b"\r\n\r\n",
    b"Host: h\r\n",
    b"Content-Length: 3\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Connection: close\r\n",
    b"Proxy-Connection: keep-alive\r\n",
    b"Proxy-Authorization: Basic cm90OnB3\r\n",
    b"abc",
    b"3\r\nabc\r\n",
    b"0\r\n\r\n",
    b"\x00",
]


def conversation(pieces: list[bytes]) -> st.SearchStrategy[tuple[bytes, list[int]]]:
    """Bytes made of protocol-looking pieces and random bytes, with the offsets where reads end."""
    data = st.lists(st.one_of(st.sampled_from(pieces), st.binary(min_size=1, max_size=8)), max_size=24)
    return data.map(b"".join).flatmap(
        lambda raw: st.tuples(st.just(raw), st.lists(st.integers(0, len(raw)), max_size=8).map(sorted))
    )


def split(raw: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *cuts, len(raw)]
    return [raw[a:b] for a, b in pairwise(bounds) if b > a]


def drive_socks(parts: list[bytes]) -> tuple[object, ...]:
    """Negotiate as the gateway does (user/password when offered, accept, succeed); the outcome."""
    p = Socks5Parser()
    seen: list[object] = []
    try:
        for i, part in enumerate(parts):
            events = p.feed(part)
            while events:
                for event in events:
                    seen.append(event)
                    if isinstance(event, MethodsOffered):
                        seen.append(p.choose_method(USERPASS if USERPASS in event.methods else NO_ACCEPTABLE))
                    elif isinstance(event, UserPass):
                        seen.append(p.auth_result(True))
                    else:
                        seen.append(p.reply(0, "127.0.0.1", 1))
                events = [] if p.done else p.feed(b"")
            if p.done:
                return ("done", tuple(seen), p.take_rest() + b"".join(parts[i + 1 :]))
    except ProtocolError as exc:
        return ("error", str(exc), p.error_reply(exc))
    return ("waiting", tuple(seen))


def drive_http(parts: list[bytes]) -> tuple[object, ...]:
    """Frame requests as the gateway does (resume after each one; a CONNECT ends the framing)."""
    p = HttpRequestParser(max_head=512)
    seen: list[object] = []
    try:
        for i, part in enumerate(parts):
            events = p.feed(part)
            while events:
                for event in events:
                    if isinstance(event, BodyData) and seen and isinstance(seen[-1], bytes):
                        seen[-1] += event.data  # how a body is cut into reads is not part of the outcome
                    else:
                        seen.append(event.data if isinstance(event, BodyData) else event)
                    if isinstance(event, ConnectRequest):
                        return ("tunnel", tuple(seen), p.take_rest() + b"".join(parts[i + 1 :]))
                events = p.resume() if isinstance(seen[-1], EndOfRequest) else []
    except ProtocolError as exc:
        return ("error", str(exc))
    return ("waiting", tuple(seen))


@settings(max_examples=400, deadline=None)
@given(conversation(SOCKS_PIECES))
def test_socks5_reads_split_anywhere_change_nothing(case):
    raw, cuts = case
    whole = drive_socks([raw] if raw else [])
    chunked = drive_socks(split(raw, cuts))
    target(float(len(whole[1]) if whole[0] != "error" else 0), label="SOCKS5 events and answers")
    assert chunked == whole


@settings(max_examples=400, deadline=None)
@given(conversation(HTTP_PIECES))
def test_http_reads_split_anywhere_change_nothing(case):
    raw, cuts = case
    whole = drive_http([raw] if raw else [])
    chunked = drive_http(split(raw, cuts))
    requests = (
        sum(isinstance(e, EndOfRequest | ConnectRequest) for e in whole[1]) if whole[0] != "error" else 0
    )
    target(float(requests), label="HTTP requests framed")
    assert chunked == whole


hosts = st.one_of(
    st.from_regex(r"[a-z0-9]([a-z0-9\-]{0,20}[a-z0-9])?(\.[a-z]{2,6}){0,2}", fullmatch=True),
    st.ip_addresses(v=4).map(str),
)
credential = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: len(s.encode()) <= 255
)


@settings(max_examples=300, deadline=None)
@given(credential, credential, hosts, st.integers(1, 65535), st.sampled_from([1, 3]), st.data())
def test_socks5_round_trip(login, password, host, port, command, data):
    lb, pb = login.encode(), password.encode()
    if host.count(".") == 3 and host.replace(".", "").isdigit():
        address = b"\x01" + bytes(int(x) for x in host.split("."))
    else:
        address = b"\x03" + bytes([len(host)]) + host.encode()
    raw = (
        b"\x05\x02\x00\x02"
        + bytes([1, len(lb)])
        + lb
        + bytes([len(pb)])
        + pb
        + bytes([5, command, 0])
        + address
        + port.to_bytes(2, "big")
        + b"tunnel bytes"
    )
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=6).map(sorted))
    outcome = drive_socks(split(raw, cuts))
    target(float(len(lb) + len(pb)), label="credential bytes")
    assert outcome[0] == "done" and outcome[2] == b"tunnel bytes"
    events = [e for e in outcome[1] if not isinstance(e, bytes)]
    assert events[1] == UserPass(login, password)
    request = events[2]
    assert isinstance(request, SocksRequest) and (request.command, request.port) == (command, port)
    assert request.host == host and request.atyp == address[0]
