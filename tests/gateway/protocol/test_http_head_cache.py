"""Parsed request/response heads are cached by their bytes: repeats give the same results as the first
parse, with fresh per-request objects and per-request body framing."""

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxyplane.gateway.protocol import http_proxy, http_response
from proxyplane.gateway.protocol.errors import ProtocolError
from proxyplane.gateway.protocol.http_proxy import (
    BodyData,
    ConnectRequest,
    Credentials,
    EndOfRequest,
    ForwardRequest,
    HttpRequestParser,
)
from proxyplane.gateway.protocol.http_response import ResponseFramer

AUTH = b"Proxy-Authorization: Basic " + base64.b64encode(b"carol:pw")


def test_repeated_head_gives_equal_fresh_requests():
    p = HttpRequestParser()
    head = b"GET http://cache.test/a HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\nAccept: */*\r\n\r\n"
    seen = []
    for _ in range(3):
        events = p.feed(head)
        assert [type(e) for e in events] == [ForwardRequest, EndOfRequest]
        seen.append(events[0])
        assert p.resume() == []
    assert seen[0] == seen[1] == seen[2] and seen[0] is not seen[1]
    assert seen[0].auth == Credentials("carol", "pw")
    assert seen[0].head == b"GET /a HTTP/1.1\r\nHost: cache.test\r\nAccept: */*\r\n\r\n"


def test_repeated_head_with_body_frames_each_body():
    head = b"POST http://cache.test/p HTTP/1.1\r\nContent-Length: 4\r\n\r\n"
    for _ in range(2):
        p = HttpRequestParser()
        events = p.feed(head + b"ab")
        assert [type(e) for e in events] == [ForwardRequest, BodyData]
        assert events[0].has_body
        rest = p.feed(b"cdGET")  # the next request's first bytes wait for resume()
        assert [type(e) for e in rest] == [BodyData, EndOfRequest] and rest[0].data == b"cd"
    chunked = b"POST http://cache.test/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    for _ in range(2):
        events = HttpRequestParser().feed(chunked + b"1\r\nx\r\n0\r\n\r\n")
        assert [type(e) for e in events] == [ForwardRequest, BodyData, EndOfRequest]


def test_malformed_heads_fail_every_time():
    bad = b"GET http://cache.test/ HTTP/1.1\r\nbad header\r\n\r\n"
    for _ in range(2):
        with pytest.raises(ProtocolError):
            HttpRequestParser().feed(bad)


def test_repeated_connect_head_is_a_tunnel_each_time():
    head = b"CONNECT cache.test:443 HTTP/1.1\r\n" + AUTH + b"\r\n\r\n"
    for _ in range(2):
        p = HttpRequestParser()
        events = p.feed(head + b"tls")
        assert events == [ConnectRequest("cache.test", 443, b"HTTP/1.1", Credentials("carol", "pw"))]
        assert p.take_rest() == b"tls"


def test_long_heads_are_parsed_without_caching():
    long = b"GET http://cache.test/l HTTP/1.1\r\nX-Big: " + b"y" * 8000 + b"\r\n\r\n"
    for _ in range(2):
        req = HttpRequestParser().feed(long)[0]
        assert isinstance(req, ForwardRequest) and req.head.endswith(b"y\r\n\r\n")


def test_cached_response_head_depends_on_the_request_method():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    for _ in range(2):
        f = ResponseFramer(b"GET")
        assert f.feed(head + b"hel") == head + b"hel" and not f.done
        assert f.feed(b"lo") == b"lo" and f.done and f.reusable
        h = ResponseFramer(b"HEAD")
        assert h.feed(head) == head and h.done and h.reusable


def test_cached_bad_framing_fails_only_responses_with_a_body():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n"
    for _ in range(2):
        with pytest.raises(ProtocolError) as exc:
            ResponseFramer(b"GET").feed(head)
        assert exc.value.status == 502
        assert ResponseFramer(b"HEAD").feed(head) == head


def test_cached_interim_and_close_delimited_responses():
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    final = b"HTTP/1.0 200 OK\r\n\r\n"
    for _ in range(2):
        f = ResponseFramer(b"GET")
        assert f.feed(interim + final + b"body") == interim + final + b"body"
        assert f.close_delimited and not f.reusable and f.eof()


pieces = st.lists(
    st.sampled_from(
        [b"GET ", b"CONNECT ", b"POST ", b"http://", b"h", b":80", b"/", b" HTTP/1.1", b" HTTP/1.0", b"\r\n",
         b"\r\n\r\n", b"Content-Length: 3", b"Content-Length: 0", b"Transfer-Encoding: chunked",
         b"Connection: close", b"Proxy-Authorization: Basic YTpi", b"3\r\nabc\r\n", b"0\r\n\r\n", b"x"]
    ),
    max_size=30,
)


def _events(parts: list[bytes]) -> list[object]:
    p = HttpRequestParser(max_head=512)
    log: list[object] = []
    try:
        for part in parts:
            log += p.feed(part)
            log += p.resume()
    except ProtocolError as exc:
        log.append((str(exc), exc.status))
    return log


@settings(max_examples=300, deadline=None)
@given(pieces, st.integers(min_value=1, max_value=9))
def test_cached_parse_equals_first_parse(parts, size):
    data = b"".join(parts) * 2
    for feeds in ([data], [data[i : i + size] for i in range(0, len(data), size)]):
        http_proxy._HEAD_CACHE.clear()
        assert _events(feeds) == _events(feeds)  # the second run finds every head cached


def _framed(method: bytes, feeds: list[bytes]) -> tuple[object, ...]:
    f = ResponseFramer(method)
    out = b""
    try:
        for part in feeds:
            out += f.feed(part)
    except ProtocolError as exc:
        return (str(exc), exc.status)
    return out, f.done, f.status, f.reusable, f.close_delimited, f.extra, f.eof()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([b"GET", b"HEAD"]), pieces, st.integers(min_value=1, max_value=9))
def test_response_framing_is_the_same_however_split_and_cached(method, parts, size):
    data = b"HTTP/1.1 200 OK\r\n" + b"".join(parts)
    http_response._RESPONSE_CACHE.clear()
    whole = _framed(method, [data])
    assert _framed(method, [data]) == whole
    split = _framed(method, [data[i : i + size] for i in range(0, len(data), size)])
    if isinstance(whole, tuple) and len(whole) == 7 and isinstance(split, tuple) and len(split) == 7:
        assert split[1:] == whole[1:]
        assert split[0] + split[5] == whole[0] + whole[5]  # where the response ends does not move
    else:
        assert split == whole
