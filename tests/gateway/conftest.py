"""Loopback fixtures for the gateway tests: an origin HTTP server, TCP and UDP echo servers, a gateway."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from proxyplane.gateway import server as server_module
from proxyplane.gateway.access import AccessTable, ServiceEntry
from proxyplane.gateway.context import Settings
from proxyplane.gateway.server import Gateway, GatewayConfig

try:
    import uvloop  # noqa: F401

    BACKENDS = [("asyncio", {}), ("asyncio", {"use_uvloop": True})]
except ImportError:  # pragma: no cover
    BACKENDS = [("asyncio", {})]

STATIC_IPS = {"127.0.1.1": "de", "127.0.1.2": "us"}
ROTATING_IPS = {"127.0.1.3": "de", "127.0.1.4": "de", "127.0.1.5": "us"}


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(params=BACKENDS, ids=lambda b: "uvloop" if b[1] else "asyncio")
def anyio_backend(request):
    return request.param


@pytest.fixture(autouse=True)
def tunnel_path(request, monkeypatch):
    """Both tunnel paths run every loopback test: under uvloop the C tunnel engine serves the plain
    HTTP and SOCKS5 listeners (the production setup), under plain asyncio the pure-Python protocol
    classes do (the fallback where the engine is not built)."""
    if "anyio_backend" not in request.fixturenames:
        return "none"
    if request.getfixturevalue("anyio_backend")[1]:
        assert server_module.available(), "the C tunnel engine is not built (pip install -e .)"
        return "engine"
    monkeypatch.setattr(server_module, "available", lambda: False)
    return "python"


@dataclass
class Origin:
    port: int
    seen: list[tuple[str, int, str]] = field(default_factory=list)  # (peer ip, connection no, path)
    servers: list[asyncio.Server] = field(default_factory=list)
    connections: int = 0
    bytes_in: int = 0  # request bytes received (heads + bodies)


async def _serve_origin(origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    origin.connections += 1
    conn_no = origin.connections
    peer = writer.get_extra_info("peername")[0]
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ")
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
            origin.seen.append((peer, conn_no, path))
            origin.bytes_in += len(head)
            body = b""
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
                origin.bytes_in += len(body)
            elif headers.get("transfer-encoding") == "chunked":
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")  # end of the (empty) trailer section
                        break
                    body += await reader.readexactly(size)
                    await reader.readexactly(2)
            if path.startswith("/big"):
                payload = b"x" * int(path.split("=")[1])
            elif method == "POST":
                payload = body
            else:
                leaked = "proxy-authorization" in headers
                payload = f"{peer} {path} host={headers.get('host')} auth={leaked}".encode()
            close = headers.get("connection", "").lower() == "close"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (
                len(payload), b"Connection: close\r\n" if close else b""))
            if method != "HEAD":
                writer.write(payload)
            await writer.drain()
            if close:
                break
    finally:
        writer.close()


@pytest.fixture
async def origin() -> AsyncIterator[Origin]:
    org = Origin(0)
    server = await asyncio.start_server(lambda r, w: _serve_origin(org, r, w), "127.0.0.1", 0)
    org.port = server.sockets[0].getsockname()[1]
    org.servers.append(server)
    if has_ipv6():
        org.servers.append(await asyncio.start_server(lambda r, w: _serve_origin(org, r, w), "::1", org.port))
    yield org
    for s in org.servers:
        s.close()


@dataclass
class Echo:
    port: int
    peers: list[str] = field(default_factory=list)


@pytest.fixture
async def tcp_echo() -> AsyncIterator[Echo]:
    echo = Echo(0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        echo.peers.append(writer.get_extra_info("peername")[0])
        # a tunnel the gateway cuts (a sub-user over its limit) may reset the upstream side: not an error here
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    echo.port = server.sockets[0].getsockname()[1]
    yield echo
    server.close()


class _UdpEcho(asyncio.DatagramProtocol):
    def __init__(self, echo: Echo) -> None:
        self.echo = echo

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.echo.peers.append(addr[0])
        self.transport.sendto(b"echo:" + data, addr)


@pytest.fixture
async def udp_echo() -> AsyncIterator[Echo]:
    echo = Echo(0)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _UdpEcho(echo), local_addr=("127.0.0.1", 0))
    echo.port = transport.get_extra_info("sockname")[1]
    yield echo
    transport.close()


def free_port(ips: list[str]) -> int:
    """A port free on every address (static listeners bind it on the wildcard address for all of ``ips``),
    drawn below the ephemeral range so that no outgoing connection of a parallel test holds it."""
    import random

    for _ in range(200):
        port = random.randrange(10_000, 30_000)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port")


def services() -> list[ServiceEntry]:
    return [
        ServiceEntry("static1", "static", "alice", "secret", exit_ips=STATIC_IPS,
                     whitelist=frozenset({"127.0.2.1"}), max_connections=50, udp_allowed=True),
        ServiceEntry("rot1", "rotating", "rot", "pw", exit_ips=ROTATING_IPS, session_mode="rotating",
                     max_connections=50),
        ServiceEntry("limited", "rotating", "lim", "pw", exit_ips={"127.0.1.6": "fr"}, max_connections=2),
    ]


@dataclass
class Env:
    gateway: Gateway
    table: AccessTable
    static_http: int
    static_socks: int
    static_https: int

    @property
    def http(self) -> tuple[str, int]:
        return ("127.0.0.1", self.gateway.gateway_port("http"))

    @property
    def socks(self) -> tuple[str, int]:
        return ("127.0.0.1", self.gateway.gateway_port("socks"))


def make_tls(tmp_path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "proxyplane-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    return server, client


@pytest.fixture
async def env(tmp_path) -> AsyncIterator[Env]:
    table = AccessTable(services())
    ports = [free_port(list(STATIC_IPS)) for _ in range(3)]
    server_tls, client_tls = make_tls(tmp_path)
    config = GatewayConfig(gateway_host="127.0.0.1", gateway_http_port=0, gateway_socks_port=0,
                           static_http_port=ports[0], static_socks_port=ports[1], static_https_port=ports[2],
                           ssl_context=server_tls)
    gateway = Gateway(table, config, settings=Settings(connect_timeout=3.0, handshake_timeout=5.0,
                                                       allow_loopback=True))
    await gateway.start()
    e = Env(gateway, table, *ports)
    e.client_tls = client_tls  # type: ignore[attr-defined]
    yield e
    await gateway.close()
