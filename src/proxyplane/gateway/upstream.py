"""Outgoing connections: resolve, bind to the exit IP, connect; plus the keep-alive pool for HTTP."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import time
from collections.abc import Callable
from typing import Protocol, TypeVar, cast

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


async def open_connection(factory: Callable[[], P], exit_ip: str, host: str, port: int,
                          timeout: float) -> tuple[asyncio.Transport, P]:
    """Connect to host:port from ``exit_ip`` (DNS names resolved here, in the exit IP's family)."""
    loop = asyncio.get_running_loop()
    family = socket.AF_INET6 if ":" in exit_ip else socket.AF_INET
    task = asyncio.current_task()
    timer = loop.call_later(timeout, task.cancel) if task is not None else None
    try:
        addr = host
        if literal_family(host) is None:
            infos = await loop.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
            if not infos:
                raise socket.gaierror("no address")
            addr = str(infos[0][4][0])
        # TCP_NODELAY is set by asyncio and uvloop on every TCP transport already
        transport, protocol = await loop.create_connection(factory, addr, port, local_addr=(exit_ip, 0))
    except asyncio.CancelledError as exc:
        if timer is None or loop.time() < timer.when():
            raise  # cancelled from outside, not our timeout
        raise UpstreamError(f"timeout connecting to {host}:{port}", 504, 4, "timeout") from exc
    except socket.gaierror as exc:
        raise UpstreamError(f"cannot resolve {host}", 502, 4, "dns") from exc
    except ConnectionRefusedError as exc:
        raise UpstreamError(f"{host}:{port} refused the connection", 502, 5, "refused") from exc
    except OSError as exc:
        raise UpstreamError(f"cannot connect to {host}:{port}", 502, 3, "connect") from exc
    finally:
        if timer is not None:
            timer.cancel()
    return cast(asyncio.Transport, transport), protocol


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
