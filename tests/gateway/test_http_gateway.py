import asyncio

import pytest

from .clients import basic, connect_tunnel, http_get, open_to, read_response, request
from .conftest import STATIC_IPS

pytestmark = pytest.mark.anyio
ALICE = basic("alice", "secret")


async def test_static_http_leaves_from_the_ip_it_entered(env, origin):
    for ip in STATIC_IPS:
        url = f"http://127.0.0.1:{origin.port}/x?a=1"
        status, _, body = await http_get((ip, env.static_http), url, ALICE)
        assert status == 200
        assert body.decode() == f"{ip} /x?a=1 host=127.0.0.1:{origin.port} auth=False"
    assert [peer for peer, _, _ in origin.seen] == list(STATIC_IPS)


async def test_keep_alive_reuses_upstream_and_checks_auth_every_request(env, origin):
    reader, writer = await open_to(("127.0.1.1", env.static_http))
    url = f"http://127.0.0.1:{origin.port}/k"
    for _ in range(3):
        writer.write(request(url, ALICE))
        status, _, body, _ = await read_response(reader)
        assert status == 200 and body.startswith(b"127.0.1.1 /k")
    writer.write(request(url, basic("alice", "wrong")))
    status, headers, _, _ = await read_response(reader)
    assert status == 407 and headers["proxy-authenticate"] == 'Basic realm="proxyplane"'
    assert await asyncio.wait_for(reader.read(), 3) == b""  # closed after the refusal
    writer.close()
    assert len({conn for _, conn, _ in origin.seen}) == 1  # one upstream connection for three requests


async def test_pipelined_requests_and_post_bodies(env, origin):
    reader, writer = await open_to(("127.0.1.2", env.static_http))
    url = f"http://127.0.0.1:{origin.port}/post"
    chunked = (f"POST {url} HTTP/1.1\r\nProxy-Authorization: {ALICE}\r\nTransfer-Encoding: chunked\r\n\r\n"
               "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").encode()
    writer.write(request(url, ALICE, "POST", b"abc" * 1000) + chunked + request(url, ALICE, "HEAD"))
    assert (await read_response(reader))[2] == b"abc" * 1000
    assert (await read_response(reader))[2] == b"hello world"
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)  # HEAD: no body follows
    assert head.startswith(b"HTTP/1.1 200")
    writer.write(request(f"http://127.0.0.1:{origin.port}/big?n=3000000", ALICE))
    status, _, body, _ = await read_response(reader)
    assert status == 200 and len(body) == 3000000
    writer.close()


async def test_connect_tunnel_from_exit_ip(env, origin):
    status, reader, writer = await connect_tunnel(("127.0.1.2", env.static_http), f"127.0.0.1:{origin.port}",
                                                  ALICE)
    assert status == 200
    writer.write(b"GET /through HTTP/1.1\r\nHost: x\r\n\r\n")
    _, _, body, _ = await read_response(reader)
    assert body.startswith(b"127.0.1.2 /through")
    writer.close()


async def test_https_to_proxy(env, origin):
    status, _, body = await http_get(("127.0.1.1", env.static_https), f"http://127.0.0.1:{origin.port}/tls",
                                     ALICE, tls=env.client_tls)
    assert status == 200 and body.startswith(b"127.0.1.1 /tls")


async def test_refusals(env, origin):
    url = f"http://127.0.0.1:{origin.port}/"
    static = ("127.0.1.1", env.static_http)
    status, headers, _ = await http_get(static, url)  # no credentials, not whitelisted
    assert status == 407 and "proxy-authenticate" in headers
    assert (await http_get(static, url, basic("alice", "nope")))[0] == 407
    assert (await http_get(static, url, basic("rot", "pw")))[0] == 407  # a rotating login on a static IP
    assert (await http_get(env.http, url, ALICE))[0] == 407  # a static login on the rotating gateway
    status, _, body = await http_get(env.http, url, basic("rot-ttl-25h", "pw"))
    assert status == 407 and b"'ttl'" in body
    status, reader, writer = await connect_tunnel(static, f"127.0.0.1:{origin.port}", basic("x", "y"))
    assert status == 407
    writer.close()
    assert origin.seen == []


async def test_upstream_errors(env, origin):
    static = ("127.0.1.1", env.static_http)
    closed_port = origin.port + 1 if origin.port < 65535 else origin.port - 1
    status, _, body = await http_get(static, f"http://127.0.0.1:{closed_port}/", ALICE)
    assert status == 502
    assert (await http_get(static, "http://no-such-host.invalid/", ALICE))[0] == 502
    row_errors: dict[str, int] = {}
    for row in env.gateway.meter.drain():
        for k, v in row.errors.items():
            row_errors[k] = row_errors.get(k, 0) + v
    assert row_errors.get("refused") == 1 and row_errors.get("dns") == 1


async def test_malformed_input_closes_only_that_connection(env, origin):
    static = ("127.0.1.1", env.static_http)
    good_r, good_w = await open_to(static)
    bad_r, bad_w = await open_to(static)
    bad_w.write(b"\x00\x01garbage\r\n\r\n")
    status, _, _, _ = await read_response(bad_r)
    assert status == 400 and await asyncio.wait_for(bad_r.read(), 3) == b""
    good_w.write(request(f"http://127.0.0.1:{origin.port}/ok", ALICE))
    assert (await read_response(good_r))[0] == 200
    good_w.close()
    bad_w.close()


async def test_whitelisted_client_ip(env, origin):
    url = f"http://127.0.0.1:{origin.port}/wl"
    status, _, body = await http_get(("127.0.1.2", env.static_http), url, source="127.0.2.1")
    assert status == 200 and body.startswith(b"127.0.1.2 /wl")
    assert (await http_get(("127.0.1.2", env.static_http), url, source="127.0.2.2"))[0] == 407
