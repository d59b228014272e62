"""CONNECT on an HTTP proxy connection of the Python path (http_conn.py): the grant's exit, the
upstream connect (direct or through a supplier) and the hand-over to the relay."""

from __future__ import annotations

import asyncio

from .http_state import HttpConnectionState
from .http_upstream import _CONNECTING
from .protocol.http_proxy import ConnectRequest
from .protocol.http_response import CONNECT_ESTABLISHED
from .relay import Relay, RelayEnd
from .routing import RoutingError
from .upstream import Connector, UpstreamError, literal_family
from .upstream_pools import ChainConnector


class HttpTunnelling(HttpConnectionState):
    def start_connect(self, req: ConnectRequest) -> None:
        grant = self.authorize(req.auth, req.host)
        if grant is None:
            return
        service_id = grant.service.service_id
        plan = None
        try:
            if grant.service.upstream_pool is not None:  # through a supplier (upstream_pools.py)
                plan = self.ctx.upstreams.plan(grant, req.host, req.port, self.ctx.destinations)
                exit_ip = ""
            else:
                exit_ip = self.ctx.router.choose(grant, self.static_ip, literal_family(req.host))
        except (RoutingError, UpstreamError) as exc:
            self.fail(exc.status, str(exc), exc.reason, service_id, req.host)
            return
        self.tunneling = True
        self.req_service, self.tunnel_host, self.exit_ip = service_id, req.host, exit_ip
        self.pause(_CONNECTING)
        if plan is not None:
            self.connector = ChainConnector(self.ctx, self, RelayEnd, plan, req.host, req.port)
            return
        self.connector = Connector(self.ctx, self, RelayEnd, exit_ip, req.host, req.port)

    def connected(self, transport: asyncio.Transport, end: RelayEnd) -> None:
        """The tunnel's upstream connection is open (``Connector`` callback)."""
        self.connector = None
        client = self.transport
        if self.closed or client is None or client.is_closing():
            transport.close()
            return
        client.write(CONNECT_ESTABLISHED)
        ctx = self.ctx
        flow = ctx.meter.open_flow(self.req_service, self.tunnel_host, requests=1)
        slot, self.service_id = self.service_id, None  # the relay releases the slot when it ends
        self.closed = True
        self.end_deadline()  # the relay's idle timeout takes over
        Relay(ctx, client, end, flow, slot).start(self.parser.take_rest())

    def connect_failed(self, error: UpstreamError) -> None:
        self.connector = None
        self.tunneling = False
        self.fail(error.status, str(error), error.reason, self.req_service, self.tunnel_host, self.exit_ip)
