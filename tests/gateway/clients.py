"""Minimal proxy clients for the tests (raw sockets, so every byte is visible)."""

from __future__ import annotations

import asyncio
import base64
import ssl

from proxyplane.gateway.protocol.socks5 import encode_address


def basic(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()


async def open_to(addr: tuple[str, int], source: str | None = None, tls: ssl.SSLContext | None = None):
    return await asyncio.wait_for(asyncio.open_connection(
        addr[0], addr[1], local_addr=(source, 0) if source else None, ssl=tls), 3)


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes, bytes]:
    """(status, headers, body, raw bytes) of one Content-Length response."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    body = await asyncio.wait_for(reader.readexactly(int(headers.get("content-length", "0"))), 3)
    return status, headers, body, head + body


def request(url: str, auth: str | None = None, method: str = "GET", body: bytes = b"",
            extra: str = "") -> bytes:
    lines = [f"{method} {url} HTTP/1.1", "Host: ignored"]
    if auth:
        lines.append(f"Proxy-Authorization: {auth}")
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode() + body


async def http_get(proxy: tuple[str, int], url: str, auth: str | None = None, source: str | None = None,
                   tls: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await open_to(proxy, source, tls)
    try:
        writer.write(request(url, auth))
        status, headers, body, _ = await read_response(reader)
        return status, headers, body
    finally:
        writer.close()


async def connect_tunnel(proxy: tuple[str, int], target: str, auth: str | None = None):
    reader, writer = await open_to(proxy)
    head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    if auth:
        head += f"Proxy-Authorization: {auth}\r\n"
    writer.write((head + "\r\n").encode())
    status_line = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
    return int(status_line.split(b" ")[1]), reader, writer


async def socks_connect(proxy: tuple[str, int], host: str, port: int, login: str | None = None,
                        password: str | None = None, command: int = 1, source: str | None = None):
    """Returns (reply code or 'auth-failed'/'no-method', reply bound (host, port), reader, writer)."""
    reader, writer = await open_to(proxy, source)
    writer.write(b"\x05\x01\x02" if login is not None else b"\x05\x01\x00")
    method = await asyncio.wait_for(reader.readexactly(2), 3)
    if method[1] == 0xFF:
        return "no-method", None, reader, writer
    if login is not None:
        lb, pb = login.encode(), (password or "").encode()
        writer.write(bytes([1, len(lb)]) + lb + bytes([len(pb)]) + pb)
        status = await asyncio.wait_for(reader.readexactly(2), 3)
        if status != b"\x01\x00":
            return "auth-failed", None, reader, writer
    writer.write(bytes([5, command, 0]) + encode_address(host, port))
    head = await asyncio.wait_for(reader.readexactly(4), 3)
    atyp = head[3]
    size = {1: 4, 4: 16}.get(atyp)
    if size is None:
        size = (await reader.readexactly(1))[0]
    raw = await reader.readexactly(size + 2)
    import ipaddress

    bound = (str(ipaddress.ip_address(raw[:size])), int.from_bytes(raw[size:], "big"))
    return head[1], bound, reader, writer
