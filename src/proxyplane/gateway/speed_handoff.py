"""C-engine tunnels of a speed-limited service (issue 32.6; speed.py): once the engine decided (slot taken,
flow opened, exit IP chosen) the connection is detached and relayed by the Python relay, where the
service's token bucket applies; the upstream connection is the Python path's (``Connector`` from the
exit IP, the destination policy included). Replies, metering and clean-up are chain_handoff's."""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, cast

from .chain_handoff import ChainedClient
from .relay import RelayEnd
from .upstream import Connector

if TYPE_CHECKING:
    from .context import Context
    from .tunnel_records import Tunnel
    from .tunnels import TunnelEngine


class DirectClient(ChainedClient):
    """The client's side while its direct upstream connection opens; the relay's once it is open."""

    def __init__(self, ctx: Context, rec: Tunnel, ok_reply: bytes) -> None:
        super().__init__(ctx, None, rec, ok_reply)  # type: ignore[arg-type]  # no supplier plan

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.pause_reading()
        rec = self.rec
        self.connector = Connector(self.ctx, self, RelayEnd, rec.exit_ip, rec.host, rec.port)  # type: ignore[assignment]


def hand_over(engine: TunnelEngine, cid: int, rec: Tunnel, ok_reply: bytes) -> None:
    """Relay engine tunnel ``cid`` in Python (where its service's bucket applies)."""
    engine.conns.pop(cid, None)
    detached = engine.engine.detach(cid)
    client = DirectClient(engine.ctx, rec, ok_reply)
    if detached is None:  # gone meanwhile
        client.end()
        return
    fd, rest = detached
    engine._spawn(engine._adopt(socket.socket(fileno=fd), client, rest, None))
