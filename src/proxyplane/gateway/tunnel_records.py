"""What Python holds per tunnel-engine connection (tunnels.py, tunnel_connect.py, tunnel_socks.py)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .protocol import socks5

if TYPE_CHECKING:
    from .access import Grant
    from .metering import Flow


def socks_reply(rep: int) -> bytes:
    return bytes((socks5.VERSION, rep, 0, socks5.ATYP_IPV4, 0, 0, 0, 0, 0, 0))


class ListenerClosed(Exception):
    """The listener a connection was accepted on is closed: the connection is closed too."""


class Tunnel:
    """What Python holds for one engine connection once it authenticated."""

    __slots__ = ("grant", "static_ip", "socks", "slot", "flow", "host", "port", "exit_ip", "task")

    def __init__(self, grant: Grant, static_ip: str | None, socks: bool) -> None:
        self.grant = grant
        self.static_ip = static_ip
        self.socks = socks
        self.slot: str | None = None  # the service whose connection slot this tunnel holds
        self.flow: Flow | None = None
        self.host = ""
        self.port = 0
        self.exit_ip = ""
        self.task: asyncio.Task[None] | None = None  # resolving a DNS name
