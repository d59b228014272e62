"""Property tests: for any input the parsers raise nothing but ProtocolError."""

from hypothesis import given, settings
from hypothesis import strategies as st

from proxyplane.gateway.protocol.errors import ProtocolError
from proxyplane.gateway.protocol.http_proxy import HttpRequestParser
from proxyplane.gateway.protocol.http_response import ResponseFramer
from proxyplane.gateway.protocol.socks5 import USERPASS, MethodsOffered, Socks5Parser, UserPass
from proxyplane.gateway.protocol.udp import parse_udp_datagram
from proxyplane.gateway.protocol.username import parse_username

chunks = st.lists(st.binary(max_size=64), max_size=12)
http_like = st.lists(
    st.sampled_from(
        [b"GET ", b"CONNECT ", b"POST ", b"http://", b"h", b":80", b"[::1]", b"/", b" HTTP/1.1", b" HTTP/1.0",
         b"\r\n", b"\r\n\r\n", b"Content-Length: 3", b"Transfer-Encoding: chunked", b"Connection: close",
         b"Proxy-Authorization: Basic YTpi", b"3\r\nabc\r\n", b"0\r\n\r\n", b"\x00", b"\xff", b"x"]
    ),
    max_size=30,
)


def _drive_http(parts):
    p = HttpRequestParser(max_head=512)
    try:
        for part in parts:
            p.feed(part)
            p.resume()
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(chunks)
def test_http_request_parser_random_bytes(parts):
    _drive_http(parts)


@settings(max_examples=300, deadline=None)
@given(http_like)
def test_http_request_parser_http_like(parts):
    _drive_http([b"".join(parts)])
    _drive_http(parts)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=8), http_like)
def test_response_framer(method, parts):
    f = ResponseFramer(method)
    try:
        for part in [b"HTTP/1.1 200 OK\r\n", *parts]:
            f.feed(part)
        f.eof()
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(chunks, st.booleans())
def test_socks5_parser(parts, accept):
    p = Socks5Parser()
    try:
        for part in parts:
            for event in p.feed(part):
                if isinstance(event, MethodsOffered):
                    p.choose_method(USERPASS if USERPASS in event.methods else 0)
                elif isinstance(event, UserPass):
                    p.auth_result(accept)
                else:
                    p.reply(0, "127.0.0.1", 1)
    except ProtocolError as exc:
        p.error_reply(exc)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_udp_parser(data):
    try:
        parse_udp_datagram(data)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_username_parser(name):
    try:
        parse_username(name)
    except ProtocolError:
        pass
