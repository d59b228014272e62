"""Outgoing connections: resolve, bind to the exit IP, connect; plus the keep-alive pool for HTTP."""

from __future__ import annotations

import asyncio
import errno
import functools
import ipaddress
import socket
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from .destinations import BlockedDestination, DestinationPolicy

if TYPE_CHECKING:
    from .context import Context

P = TypeVar("P", bound=asyncio.BaseProtocol)


class UpstreamError(Exception):
    """Could not reach the destination. ``status`` for HTTP, ``rep`` for SOCKS5, ``reason`` for metering."""

    def __init__(self, message: str, status: int, rep: int, reason: str) -> None:
        super().__init__(message)
        self.status = status
        self.rep = rep
        self.reason = reason


@functools.lru_cache(maxsize=8192)
def literal_family(host: str) -> int | None:
    """AF_INET/AF_INET6 when ``host`` is an IP literal, None for a DNS name."""
    if not host or not (host[0].isdigit() or ":" in host):
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    return socket.AF_INET if ip.version == 4 else socket.AF_INET6


OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)
IPV6_FREEBIND = 78  # linux/in6.h (4.15+); IP_FREEBIND on IPPROTO_IP covers older kernels
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


class NoIPv6Address(socket.gaierror):
    """The destination name has IPv4 addresses but no AAAA, and the exit is IPv6."""


def upstream_error(exc: BaseException, host: str, port: int) -> UpstreamError:
    """The UpstreamError for an exception raised while resolving/connecting."""
    if isinstance(exc, BlockedDestination):  # 403 / SOCKS5 "connection not allowed by ruleset"
        return UpstreamError(f"destination {host} is not allowed", 403, 2, "blocked")
    if isinstance(exc, NoIPv6Address):  # an IPv6 exit reaches destinations over IPv6 only
        return UpstreamError(f"destination {host} has no IPv6 address (AAAA)", 502, 4, "no_ipv6")
    if isinstance(exc, socket.gaierror):
        return UpstreamError(f"cannot resolve {host}", 502, 4, "dns")
    if isinstance(exc, ConnectionRefusedError):
        return UpstreamError(f"{host}:{port} refused the connection", 502, 5, "refused")
    if isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS:  # the node's fault, not the exit IP's
        message = "gateway at capacity: no descriptor for the upstream connection"
        return UpstreamError(message, 503, 1, "capacity")
    return UpstreamError(f"cannot connect to {host}:{port}", 502, 3, "connect")


def timeout_error(host: str, port: int) -> UpstreamError:
    return UpstreamError(f"timeout connecting to {host}:{port}", 504, 4, "timeout")


async def resolve(loop: asyncio.AbstractEventLoop, exit_ip: str, host: str, port: int,
                  policy: DestinationPolicy) -> str:
    """The address to connect to for a DNS name, in the exit IP's family; socket.gaierror when there is
    none, BlockedDestination when the policy refuses it (checked on the address, the one connected to)."""
    family = socket.AF_INET6 if ":" in exit_ip else socket.AF_INET
    try:
        infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
    except socket.gaierror:
        if family == socket.AF_INET6 and await _has_ipv4(loop, host, port):
            raise NoIPv6Address(socket.EAI_NONAME, f"{host} has no IPv6 address") from None
        raise
    if not infos:
        raise socket.gaierror("no address")
    address = str(infos[0][4][0])  # the caller dials exactly this literal: checked here, no second lookup
    if not policy.permits(address, port):
        raise BlockedDestination(address)
    return address


async def _has_ipv4(loop: asyncio.AbstractEventLoop, host: str, port: int) -> bool:
    """Whether ``host`` resolves over IPv4 (asked only after its AAAA lookup failed: the error wording)."""
    try:
        return bool(await loop.getaddrinfo(host, port, family=socket.AF_INET, type=socket.SOCK_STREAM))
    except OSError:
        return False


def freebind_socket(exit_ip: str) -> socket.socket:
    """A non-blocking IPv6 TCP socket bound to ``exit_ip`` with IP_FREEBIND: any address of a prefix routed
    to the host is bound without being configured (issue 16); the port is chosen at connect time."""
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_IPV6, IPV6_FREEBIND, 1)
        except OSError:
            sock.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((exit_ip, 0))
    except BaseException:
        sock.close()
        raise
    return sock


async def _freebind_connect(loop: asyncio.AbstractEventLoop, factory: Callable[[], P], exit_ip: str,
                            address: str, port: int) -> tuple[asyncio.BaseTransport, P]:
    sock = freebind_socket(exit_ip)
    try:
        await loop.sock_connect(sock, (address, port))
    except BaseException:
        sock.close()
        raise
    return await loop.create_connection(factory, sock=sock)


def _connect_from(loop: asyncio.AbstractEventLoop, factory: Callable[[], P], exit_ip: str, address: str,
                  port: int) -> Coroutine[Any, Any, tuple[asyncio.BaseTransport, P]]:
    """Connect to an address literal from ``exit_ip`` (IPv6 exits: freebind, see ``freebind_socket``)."""
    if ":" in exit_ip:
        return _freebind_connect(loop, factory, exit_ip, address, port)
    return loop.create_connection(factory, address, port, local_addr=(exit_ip, 0))


async def _resolve_and_connect(loop: asyncio.AbstractEventLoop, factory: Callable[[], P], exit_ip: str,
                               host: str, port: int, policy: DestinationPolicy
                               ) -> tuple[asyncio.BaseTransport, P]:
    address = await resolve(loop, exit_ip, host, port, policy)
    # TCP_NODELAY is set by asyncio and uvloop on every TCP transport already
    return await _connect_from(loop, factory, exit_ip, address, port)


async def _refuse(address: str) -> Any:
    raise BlockedDestination(address)


def _connect_coro(loop: asyncio.AbstractEventLoop, factory: Callable[[], P], exit_ip: str, host: str,
                  port: int, policy: DestinationPolicy
                  ) -> Coroutine[Any, Any, tuple[asyncio.BaseTransport, P]]:
    if literal_family(host) is None:
        return _resolve_and_connect(loop, factory, exit_ip, host, port, policy)
    if not policy.permits(host, port):
        return _refuse(host)
    return _connect_from(loop, factory, exit_ip, host, port)


async def open_connection(factory: Callable[[], P], exit_ip: str, host: str, port: int,
                          timeout: float, policy: DestinationPolicy) -> tuple[asyncio.Transport, P]:
    """Connect to host:port from ``exit_ip`` (DNS names resolved here, in the exit IP's family); a
    destination ``policy`` refuses raise UpstreamError(reason "blocked")."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            transport, protocol = await _connect_coro(loop, factory, exit_ip, host, port, policy)
    except TimeoutError as exc:
        raise timeout_error(host, port) from exc
    except OSError as exc:
        raise upstream_error(exc, host, port) from exc
    return cast(asyncio.Transport, transport), protocol


class ConnectOwner(Protocol):
    """Who gets the result of a ``Connector``."""

    def connected(self, transport: asyncio.Transport, protocol: Any) -> None: ...

    def connect_failed(self, error: UpstreamError) -> None: ...


class Connector:
    """Opens one upstream connection for a tunnel without an ``asyncio.Task``.

    The event loop's ``create_connection`` coroutine is stepped by hand: each future it waits on gets
    ``_step`` as its done-callback, which is all a Task would do, minus creating and registering the
    Task and one extra loop iteration before the connect starts. The connect timeout is a
    ``Deadlines`` entry (no timer per connection). The owner gets exactly one of ``connected`` or
    ``connect_failed``, unless ``cancel()`` was called first (then neither; a transport that still
    arrives is closed).
    """

    __slots__ = ("owner", "ctx", "host", "port", "_coro", "_waiting", "_deadline", "_timed_out",
                 "_cancelled")

    def __init__(self, ctx: Context, owner: ConnectOwner, factory: Callable[[], asyncio.BaseProtocol],
                 exit_ip: str, host: str, port: int) -> None:
        self.owner = owner
        self.ctx = ctx
        self.host = host
        self.port = port
        self._waiting: asyncio.Future[Any] | None = None
        self._timed_out = self._cancelled = False
        self._coro = _connect_coro(asyncio.get_running_loop(), factory, exit_ip, host, port, ctx.destinations)
        self._deadline = ctx.deadlines.add(self, ctx.settings.connect_timeout)
        self._step(None)

    def _step(self, _fut: object) -> None:
        try:
            waiting = self._coro.send(None)
        except StopIteration as stop:
            self._finish(stop.value, None)
        except BaseException as exc:  # noqa: BLE001 - handed to the owner (or dropped when cancelled)
            self._finish(None, exc)
        else:
            if waiting is None:  # a bare yield: step again on the next loop iteration
                asyncio.get_running_loop().call_soon(self._step, None)
                return
            self._waiting = waiting
            waiting.add_done_callback(self._step)

    def _finish(self, result: tuple[asyncio.BaseTransport, Any] | None, exc: BaseException | None) -> None:
        self._waiting = None
        self.ctx.deadlines.remove(self, self._deadline)
        if result is not None:
            if self._cancelled:
                result[0].close()
            else:
                self.owner.connected(cast(asyncio.Transport, result[0]), result[1])
            return
        if self._timed_out:
            self.owner.connect_failed(timeout_error(self.host, self.port))
        elif self._cancelled:
            return
        elif isinstance(exc, OSError):
            self.owner.connect_failed(upstream_error(exc, self.host, self.port))
        elif isinstance(exc, Exception):
            self.owner.connect_failed(UpstreamError(f"cannot connect: {exc}", 502, 1, "connect"))
        elif exc is not None and not isinstance(exc, asyncio.CancelledError):
            raise exc

    def expire(self) -> None:
        """The connect timeout (a ``Deadlines`` sweep)."""
        if self._waiting is not None and not self._cancelled:
            self._timed_out = True
            self._waiting.cancel()

    def cancel(self) -> None:
        """The client went away: stop connecting; the owner hears nothing more."""
        self._cancelled = True
        if self._waiting is not None:
            self._waiting.cancel()


class Pooled(Protocol):
    """What the pool needs from an idle upstream connection."""

    key: tuple[str, str, int]
    idle_since: float
    transport: asyncio.Transport | None


class UpstreamPool:
    """Idle keep-alive upstream connections keyed by (exit IP, host, port)."""

    def __init__(self, max_idle_per_key: int = 64, idle_timeout: float = 30.0) -> None:
        self._idle: dict[tuple[str, str, int], list[Pooled]] = {}
        self.max_idle_per_key = max_idle_per_key
        self.idle_timeout = idle_timeout

    def get(self, key: tuple[str, str, int]) -> Pooled | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None

    def put(self, conn: Pooled) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if len(idle) >= self.max_idle_per_key or conn.transport is None:
            if conn.transport is not None:
                conn.transport.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    def discard(self, conn: Pooled) -> None:
        idle = self._idle.get(conn.key)
        if idle and conn in idle:
            idle.remove(conn)

    def sweep(self) -> None:
        cutoff = time.monotonic() - self.idle_timeout
        for key in list(self._idle):
            keep = []
            for conn in self._idle[key]:
                if conn.idle_since < cutoff and conn.transport is not None:
                    conn.transport.close()
                else:
                    keep.append(conn)
            if keep:
                self._idle[key] = keep
            else:
                del self._idle[key]

    def close(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                if conn.transport is not None:
                    conn.transport.close()
        self._idle.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._idle.values())
