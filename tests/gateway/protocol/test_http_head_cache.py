"""Parsed request/response heads are cached by their bytes: repeats give the same results as the first
parse, with fresh per-request objects and per-request body framing."""

import base64

import pytest

from proxyplane.gateway.protocol.errors import ProtocolError
from proxyplane.gateway.protocol.http_proxy import (
    BodyData,
    ConnectRequest,
    Credentials,
    EndOfRequest,
    ForwardRequest,
    HttpRequestParser,
    ResponseFramer,
)

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
