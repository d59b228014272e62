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
)
from proxyplane.gateway.protocol.http_response import ResponseFramer, auth_required, build_reply


def auth(login: str, password: str) -> bytes:
    return b"Proxy-Authorization: Basic " + base64.b64encode(f"{login}:{password}".encode())


def test_absolute_get_is_rewritten_to_origin_form():
    p = HttpRequestParser()
    events = p.feed(
        b"GET http://example.test:8080/a/b?q=1 HTTP/1.1\r\nHost: wrong\r\n" + auth("bob", "s:ecret")
        + b"\r\nProxy-Connection: keep-alive\r\nConnection: X-Drop\r\nX-Drop: 1\r\nAccept: */*\r\n\r\n"
    )
    assert len(events) == 2
    req, end = events
    assert isinstance(req, ForwardRequest) and isinstance(end, EndOfRequest)
    assert (req.method, req.host, req.port, req.path) == (b"GET", "example.test", 8080, b"/a/b?q=1")
    assert req.auth == Credentials("bob", "s:ecret")
    assert req.keep_alive and not req.has_body
    assert req.head == b"GET /a/b?q=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n\r\n"


def test_keep_alive_pipelined_requests_wait_for_resume():
    p = HttpRequestParser()
    two = b"GET http://h/1 HTTP/1.1\r\n\r\nGET http://h/2 HTTP/1.1\r\nConnection: close\r\n\r\n"
    first = p.feed(two)
    assert [type(e) for e in first] == [ForwardRequest, EndOfRequest]
    assert first[0].path == b"/1" and first[0].port == 80
    assert p.feed(b"") == []
    second = p.resume()
    assert second[0].path == b"/2" and second[0].keep_alive is False
    assert second[0].head.startswith(b"GET /2 HTTP/1.1\r\nHost: h\r\n")


def test_http10_keep_alive_only_when_asked():
    assert not HttpRequestParser().feed(b"GET http://h/ HTTP/1.0\r\n\r\n")[0].keep_alive
    ka = HttpRequestParser().feed(b"GET http://h/ HTTP/1.0\r\nProxy-Connection: Keep-Alive\r\n\r\n")
    assert ka[0].keep_alive


def test_content_length_body_split_across_feeds():
    p = HttpRequestParser()
    events = p.feed(b"POST http://h/x HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123")
    assert [type(e) for e in events] == [ForwardRequest, BodyData]
    assert events[0].has_body and events[0].head.endswith(b"Content-Length: 10\r\n\r\n")
    events = p.feed(b"456789GET")
    assert [type(e) for e in events] == [BodyData, EndOfRequest]
    assert events[0].data == b"456789"
    assert p.buffered == 3


def test_chunked_body_framing_kept_raw():
    p = HttpRequestParser()
    body = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\n"
    events = p.feed(b"POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    out = b""
    for i in range(len(body)):  # one byte at a time
        events += p.feed(body[i : i + 1])
    out = b"".join(e.data for e in events if isinstance(e, BodyData))
    assert out == body
    assert isinstance(events[-1], EndOfRequest)


def test_connect_and_bytes_after_it():
    p = HttpRequestParser()
    head = b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n" + auth("a", "b")
    events = p.feed(head + b"\r\n\r\n\x16\x03")
    assert events == [ConnectRequest("::1", 443, b"HTTP/1.1", Credentials("a", "b"))]
    assert p.take_rest() == b"\x16\x03"
    with pytest.raises(ProtocolError):
        p.feed(b"more")


@pytest.mark.parametrize(
    "raw,status",
    [
        (b"GET /origin-form HTTP/1.1\r\n\r\n", 400),
        (b"GET https://h/ HTTP/1.1\r\n\r\n", 400),
        (b"GET http://u@h/ HTTP/1.1\r\n\r\n", 400),
        (b"GET http://h/ HTTP/2.0\r\n\r\n", 505),
        (b"GET http://h/ HTTP/1.1\r\nBad Header\r\n\r\n", 400),
        (b"GET http://h/ HTTP/1.1\r\n folded: x\r\n\r\n", 400),
        (b"POST http://h/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"POST http://h/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        (b"POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET http://h:99999/ HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT h HTTP/1.1\r\n\r\n", 400),
        (b"GET http://h/ HTTP/1.1\r\nProxy-Authorization: Basic !!!\r\n\r\n", 407),
        (b"GET http://h/ HTTP/1.1\r\nProxy-Authorization: Digest x\r\n\r\n", 407),
    ],
)
def test_malformed_requests(raw, status):
    with pytest.raises(ProtocolError) as info:
        HttpRequestParser().feed(raw)
    assert info.value.status == status


def test_head_limit():
    p = HttpRequestParser(max_head=1024)
    with pytest.raises(ProtocolError) as info:
        p.feed(b"GET http://h/ HTTP/1.1\r\nX: " + b"a" * 2000)
    assert info.value.status == 431


def test_response_content_length_and_leftover():
    f = ResponseFramer(b"GET")
    assert f.feed(b"HTTP/1.1 200 OK\r\nContent-Le") == b""
    out = f.feed(b"ngth: 5\r\n\r\nhel")
    assert out == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel" and not f.done
    assert f.feed(b"loEXTRA") == b"lo"
    assert f.done and f.reusable and f.extra == b"EXTRA"


def test_response_chunked_with_100_continue():
    f = ResponseFramer(b"POST")
    raw = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"3\r\nabc\r\n0\r\n\r\n")
    assert f.feed(raw) == raw and f.done and f.status == 200


@pytest.mark.parametrize("method,status", [(b"HEAD", 200), (b"GET", 204), (b"GET", 304)])
def test_response_without_body(method, status):
    f = ResponseFramer(method)
    f.feed(b"HTTP/1.1 %d X\r\nContent-Length: 100\r\n\r\n" % status)
    assert f.done


def test_response_close_delimited_and_connection_close():
    f = ResponseFramer(b"GET")
    assert f.feed(b"HTTP/1.0 200 OK\r\n\r\nabc") == b"HTTP/1.0 200 OK\r\n\r\nabc"
    assert not f.done and not f.reusable and f.eof()
    g = ResponseFramer(b"GET")
    g.feed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
    assert g.done and not g.reusable


def test_malformed_response_is_502():
    with pytest.raises(ProtocolError) as info:
        ResponseFramer(b"GET").feed(b"SMTP ready\r\n\r\n")
    assert info.value.status == 502


def test_replies():
    r = auth_required()
    assert r.startswith(b"HTTP/1.1 407 Proxy Authentication Required\r\n")
    assert b'Proxy-Authenticate: Basic realm="proxyplane"\r\n' in r
    f = ResponseFramer(b"GET")
    for status in (400, 403, 429, 502, 504):
        f = ResponseFramer(b"GET")
        assert f.feed(build_reply(status, "why")).endswith(b"why\n") and f.done and f.status == status
