"""Byte-identical requests on one keep-alive connection (their parsed heads are cached): each one is still
authenticated against the current access table and metered."""

import asyncio
import dataclasses

import pytest

from .clients import basic, open_to, read_response, request

pytestmark = pytest.mark.anyio


async def test_identical_heads_reauthenticated_and_metered_each_request(env, origin):
    url = f"http://127.0.0.1:{origin.port}/same"
    head = request(url, basic("alice", "secret"))
    env.gateway.meter.drain()
    reader, writer = await open_to(("127.0.1.2", env.static_http))
    for _ in range(4):
        writer.write(head)
        status, _, body, _ = await read_response(reader)
        assert status == 200 and body.startswith(b"127.0.1.2 /same")
    rows = [r for r in env.gateway.meter.drain() if r.service_id == "static1" and r.host == "127.0.0.1"]
    assert sum(r.requests for r in rows) == 4 and sum(r.connections for r in rows) == 1
    assert sum(r.bytes_up for r in rows) == 4 * origin.bytes_in // len(origin.seen)
    entry = env.table.get("static1")
    env.table.upsert(dataclasses.replace(entry, password="rotated"))
    try:
        writer.write(head)  # the very same bytes: refused now
        status, headers, _, _ = await read_response(reader)
        assert status == 407 and "proxy-authenticate" in headers
        assert await asyncio.wait_for(reader.read(), 3) == b""
    finally:
        writer.close()
        env.table.upsert(entry)
    assert len(origin.seen) == 4
