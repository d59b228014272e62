"""Which exit IPs a node can serve: its host's local addresses, as a short list of prefixes.

A static listener is a wildcard socket (server.py): it receives connections for every address local to the
host, so an exit IP is served exactly when it lies in one of the host's local address prefixes. Those are
read from the kernel's ``local`` routing table over netlink (e.g. ``127.0.0.0/8`` is one local route,
each configured address one /32 or /128), collapsed: a handful of prefixes whatever the number of exit IPs.
Cost: O(prefixes) to publish, O(exit IPs) to count the ones outside, done off the event loop and only when
the access table or the prefixes changed.

``LocalAddresses`` (one per node) refreshes them at start and every ``interval`` (30 s), hands them to the
node's router (rotating pools: only local exits are chosen, routing.Router.set_local), counts the static
exit IPs outside them (the node's status), and writes one row of ``gateway_node_addresses`` (the prefixes,
that count, a heartbeat); it deletes the row when the node stops. The legacy ``networkstatus/inactive``
(domains/legacy/) reads those rows: the IPs no live node (heartbeat within ``STALE`` seconds) can serve;
while no node has published a row, nothing is reported on these grounds (unknown is not inactive). What
both sides share (parsing, ``outside``, ``STALE``) is core/address_prefixes.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import struct
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from proxyplane.core.address_prefixes import Network, outside
from proxyplane.core.clock import utcnow
from proxyplane.storage.engine import Database
from proxyplane.storage.repos import gateway_nodes

from . import periodic
from .access import AccessProvider
from .routing import Router

log = logging.getLogger(__name__)

SAMPLE = 10  # non-local exit IPs kept for the status

_RTM_GETROUTE, _NLMSG_DONE, _NLMSG_ERROR = 26, 3, 2
_NLM_F_REQUEST, _NLM_F_DUMP = 1, 0x300
_RT_TABLE_LOCAL, _RTN_LOCAL, _RTA_DST, _RTA_TABLE = 255, 2, 1, 15


def _dump_local_routes(family: int) -> list[Network]:
    """The ``local`` routes of one address family (RTM_GETROUTE dump over a netlink socket)."""
    out: list[Network] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:  # NETLINK_ROUTE
        sock.settimeout(2.0)
        rtmsg = struct.pack("BBBBBBBBI", family, 0, 0, 0, 0, 0, 0, 0, 0)
        header = struct.pack("=IHHII", 16 + len(rtmsg), _RTM_GETROUTE, _NLM_F_REQUEST | _NLM_F_DUMP, 1, 0)
        sock.send(header + rtmsg)
        size = 4 if family == socket.AF_INET else 16
        while True:
            data = sock.recv(1 << 16)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, offset)
                if kind == _NLMSG_DONE:
                    return out
                if kind == _NLMSG_ERROR:
                    raise OSError("netlink route dump refused")
                if length < 16:
                    return out
                body = data[offset + 16:offset + length]
                fam, dst_len, _s, _t, table, _p, _c, rtype, _f = struct.unpack_from("BBBBBBBBI", body)
                dst = None
                pos = 12
                while pos + 4 <= len(body):
                    rta_len, rta_type = struct.unpack_from("=HH", body, pos)
                    if rta_len < 4:
                        break
                    value = body[pos + 4:pos + rta_len]
                    if rta_type == _RTA_DST and len(value) == size:
                        dst = value
                    elif rta_type == _RTA_TABLE and len(value) == 4:
                        table = struct.unpack("=I", value)[0]
                    pos += (rta_len + 3) & ~3
                if fam == family and table == _RT_TABLE_LOCAL and rtype == _RTN_LOCAL and dst is not None:
                    address = ipaddress.ip_address(dst)
                    out.append(ipaddress.ip_network(f"{address}/{dst_len}", strict=False))
                offset += (length + 3) & ~3


def local_prefixes() -> list[Network] | None:
    """The host's local address prefixes, collapsed (None where netlink is not available)."""
    found: list[Network] = []
    try:
        for family in (socket.AF_INET, socket.AF_INET6):
            try:
                found.extend(_dump_local_routes(family))
            except OSError:
                if family == socket.AF_INET:
                    raise
    except (OSError, AttributeError, ValueError):
        return None
    v4 = [n for n in found if n.version == 4]
    v6 = [n for n in found if n.version == 6]
    return [*ipaddress.collapse_addresses(v4), *ipaddress.collapse_addresses(v6)]


class LocalAddresses:
    def __init__(self, db: Database, node_id: str, access: AccessProvider, interval: float = 30.0,
                 router: Router | None = None) -> None:
        self.db, self.node_id, self.access, self.interval = db, node_id, access, interval
        self.router = router
        self.on_prefixes: Callable[[list[Network] | None], None] | None = None  # e.g. the destination rules
        self.prefixes: list[Network] | None = None
        self.nonlocal_count = 0
        self.nonlocal_sample: list[str] = []
        self._counted: tuple[Any, ...] | None = None  # (access version, prefixes) last counted
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.refresh()
        self._task = asyncio.ensure_future(self._run())

    async def refresh(self) -> None:
        prefixes = await asyncio.to_thread(local_prefixes)
        self.prefixes = prefixes
        if self.router is not None:
            self.router.set_local(prefixes)
        if self.on_prefixes is not None:
            self.on_prefixes(prefixes)
        if prefixes is not None:
            key = (getattr(self.access, "version", None), tuple(prefixes))
            if key != self._counted or key[0] is None:
                missing = await asyncio.to_thread(outside, self.access.listen_ips(), prefixes)
                if missing and len(missing) != self.nonlocal_count:
                    log.warning("%d static exit IP(s) are not local to this node (e.g. %s): they cannot be "
                                "served here", len(missing), ", ".join(sorted(missing)[:3]))
                self.nonlocal_count, self.nonlocal_sample = len(missing), sorted(missing)[:SAMPLE]
                self._counted = key
        await self.publish()

    async def publish(self) -> None:
        now = utcnow()
        texts = [str(n) for n in self.prefixes or ()]
        async with self.db.unit_of_work(write=True) as uow:
            await gateway_nodes.publish_addresses(uow.session, self.node_id, texts, self.nonlocal_count, now)
            await gateway_nodes.prune_addresses(uow.session, now - timedelta(hours=1))
            await uow.commit()

    def status(self) -> dict[str, Any]:
        return {"local_prefixes": [str(n) for n in self.prefixes] if self.prefixes is not None else None,
                "nonlocal_exit_ips": self.nonlocal_count, "nonlocal_sample": list(self.nonlocal_sample)}

    async def _run(self) -> None:
        await periodic.run_forever(
            self.refresh, lambda: asyncio.sleep(self.interval), log, "local address refresh failed; retrying"
        )

    async def close(self) -> None:
        await periodic.cancel(self._task)
        self._task = None
        with contextlib.suppress(Exception):
            async with self.db.unit_of_work(write=True) as uow:
                await gateway_nodes.remove_addresses(uow.session, self.node_id)
                await uow.commit()
