"""Rotating products that draw from an upstream pool (issue 36.4): the supplier endpoints a node knows, the
order it tries them in, sessions kept on one supplier, and the bytes relayed through each.

A service whose entry names ``upstream_pool`` has no local exits: every tunnel (CONNECT, SOCKS5, a plain
HTTP request) goes through a supplier of the pool (core/proxy_chain.py). ``plan`` gives the attempts in
order: the supplier a live session is pinned to first, then the pool by position, those this node saw fail
in the last ``DOWN_SECONDS`` and those the last health check found down moved to the end (still tried: the
check may be stale). ``ChainConnector`` tries them in turn (the next one when one refuses or times out)
and has the ``Connector`` interface, so the protocol classes use either alike. A strict session (issue
36.3) never moves: its supplier failing answers 502 ``sticky_gone``.

Sessions are the router's sticky sessions (the supplier's mark ``"upstream:<id hex>"`` in place of an
exit IP), so the host's workers share them in memory and the nodes through the store (sticky_sync.py)
like local ones: a session moved to the next supplier (its own failed) moves for every worker and node,
and one started elsewhere is asked of the same supplier here. The session id sent to the supplier is
derived from the service and the customer's session id (``session_token``), the same everywhere, so the
same supplier gives the same exit wherever the connection lands.

Bytes: the customer's are metered by the tunnel's ``Flow`` as for local exits (quotas apply); each
supplier's share (the cost side of the margin report) is counted by watching those flows after every
harvest of the meter and added to the meter as the supplier's own rows (``Meter.supplier``), so it goes
through the usage spool to ``upstream_usage`` with the customers' usage (gateway/usage_sink.py).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proxyplane.core.proxy_chain import Hop, HopFailed, Template, open_through, session_token
from proxyplane.storage.models.gateway import SUPPLIER_MARK

from .access import Grant
from .destinations import BlockedDestination
from .routing import DEFAULT_SID, STICKY_GONE, STRICT_GONE, RoutingError
from .upstream import UpstreamError, literal_family, upstream_error

if TYPE_CHECKING:
    from .context import Context
    from .metering import Flow, Meter
    from .routing import Router

DOWN_SECONDS = 30.0  # a supplier that failed here is tried last for this long
NO_POOL = "no upstream supplier in this service's pool"
POOL_FAILED = "upstream_failed"  # the usage error category when every supplier failed


@dataclass(frozen=True, slots=True)
class UpstreamEntry:
    upstream_id: str
    pool: str
    position: int
    scheme: str
    host: str
    port: int
    username: str
    password: str
    template: Template
    health: str  # the last health check: up, down, unknown


@dataclass(slots=True)
class Attempt:
    entry: UpstreamEntry
    hop: Hop


@dataclass(slots=True)
class Plan:
    service_id: str
    sid: str | None  # the session (None: rotating)
    ttl: float  # seconds a session stays on its supplier
    strict: bool
    attempts: list[Attempt]


class UpstreamDirectory:
    """The pools this node serves, sessions on suppliers, per-supplier counters."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.pools: dict[str, tuple[UpstreamEntry, ...]] = {}
        self.down_until: dict[str, float] = {}
        # where sessions are held: the Context's router, read at each use (a worker's is set after start)
        self.router_of: Callable[[], Router] | None = None
        self.marks: dict[str, str] = {}  # upstream id -> its mark in a session ("upstream:<hex>")
        self.watched: dict[Flow, tuple[str, int, int]] = {}  # open tunnels' flows -> (upstream, seen)
        self.meter: Meter | None = None  # where the suppliers' counts go (the Context's meter)

    def replace(self, entries: Iterable[UpstreamEntry]) -> None:
        pools: dict[str, list[UpstreamEntry]] = {}
        for e in sorted(entries, key=lambda e: (e.pool, e.position)):
            pools.setdefault(e.pool, []).append(e)
        self.pools = {name: tuple(members) for name, members in pools.items()}
        self.marks = {e.upstream_id: SUPPLIER_MARK + uuid.UUID(e.upstream_id).hex
                      for members in pools.values() for e in members}

    # -- choosing --
    def plan(self, grant: Grant, host: str, port: int, destinations: Any) -> Plan:
        """The attempts for one tunnel; RoutingError when the pool is empty (503) or a strict session's
        supplier is gone; UpstreamError "blocked" for an IP literal the destination policy refuses (a
        name is resolved by the supplier)."""
        entry = grant.service
        members = self.pools.get(entry.upstream_pool or "")
        if not members:
            raise RoutingError(NO_POOL, "no_upstream", 503)
        if literal_family(host) is not None and not destinations.permits(host, port):
            raise upstream_error(BlockedDestination(host), host, port)
        options = grant.options
        sid = options.sid if options is not None else None
        if sid is None and entry.session_mode == "sticky":
            sid = DEFAULT_SID
        ttl_minutes = options.ttl_minutes if options is not None else None
        ttl = ttl_minutes * 60 if ttl_minutes is not None else float(entry.sticky_ttl)
        strict = bool(options is not None and options.strict and sid is not None)
        now = self.clock()
        ordered = sorted(members, key=lambda e: (self.down_until.get(e.upstream_id, 0.0) > now,
                                                 e.health == "down", e.position))
        router = self.router_of() if self.router_of is not None else None
        held = router.held(entry.service_id, sid) if sid is not None and router is not None else None
        if held is not None and held.startswith(SUPPLIER_MARK):
            first = next((e for e in members if self.marks.get(e.upstream_id) == held), None)
            if first is None and strict:
                raise RoutingError(STRICT_GONE, STICKY_GONE)
            if first is not None:
                ordered = [first] if strict else [first, *(e for e in ordered if e is not first)]
        country = options.country if options is not None else None
        allowed = entry.subuser.countries if entry.subuser is not None else None
        if allowed is not None:  # a sub-user limited to some countries: the supplier is asked for one of them
            if country is None:
                country = sorted(allowed)[0] if len(allowed) == 1 else random.choice(sorted(allowed))
            elif country not in allowed:
                raise RoutingError(f"no exit IP in country {country}", "geo")
        values: dict[str, str | None] = {
            "country": country,
            "region": getattr(options, "region", None),
            "city": getattr(options, "city", None),
            "asn": None if getattr(options, "asn", None) is None else str(getattr(options, "asn", "")),
            "session": session_token(entry.service_id, sid) if sid is not None else None,
            "ttl": str(max(1, int(ttl // 60))) if sid is not None else None,
        }
        attempts = []
        for e in ordered:
            values["user"] = e.username
            attempts.append(Attempt(e, Hop(e.scheme, e.host, e.port, e.template.render(values), e.password)))
        return Plan(entry.service_id, sid, ttl, strict, attempts)

    def succeeded(self, plan: Plan, entry: UpstreamEntry) -> None:
        self.down_until.pop(entry.upstream_id, None)
        if self.meter is not None:
            self.meter.supplier(entry.upstream_id, tunnels=1)
        router = self.router_of() if self.router_of is not None else None
        if plan.sid is not None and router is not None:
            mark = self.marks.get(entry.upstream_id) or SUPPLIER_MARK + uuid.UUID(entry.upstream_id).hex
            if router.held(plan.service_id, plan.sid) != mark:  # new (the TTL runs from the pick) or moved
                router.hold(plan.service_id, plan.sid, mark, plan.ttl)

    def failed(self, entry: UpstreamEntry) -> None:
        self.down_until[entry.upstream_id] = self.clock() + DOWN_SECONDS
        if self.meter is not None:
            self.meter.supplier(entry.upstream_id, failed=1)

    # -- counting --
    def count(self, upstream_id: str, up: int, down: int) -> None:
        """Bytes relayed through a supplier outside a watched flow (a plain HTTP request's)."""
        if self.meter is not None and (up or down):
            self.meter.supplier(upstream_id, up=up, down=down)

    def watch(self, flow: Flow, upstream_id: str) -> None:
        self.watched[flow] = (upstream_id, 0, 0)

    def check_flows(self) -> None:
        """After each harvest: the watched tunnels' new bytes to their suppliers; closed ones dropped."""
        meter = self.meter
        if meter is None:
            return
        for flow, (upstream_id, up, down) in list(self.watched.items()):
            self.count(upstream_id, flow.up - up, flow.down - down)
            if not meter.is_open(flow):
                del self.watched[flow]
            else:
                self.watched[flow] = (upstream_id, flow.up, flow.down)


class ChainConnector:
    """Opens a tunnel through the plan's suppliers in turn; the ``Connector`` interface: the owner gets
    exactly one of ``connected(transport, protocol)`` / ``connect_failed(error)`` unless cancelled first.
    A tunnel whose protocol is a relay end has its flow watched for the supplier's byte count."""

    __slots__ = ("ctx", "owner", "task", "entry")

    def __init__(self, ctx: Context, owner: Any, factory: Callable[[], asyncio.BaseProtocol], plan: Plan,
                 host: str, port: int) -> None:
        self.ctx, self.owner = ctx, owner
        self.entry: UpstreamEntry | None = None
        self.task = asyncio.get_running_loop().create_task(self._run(factory, plan, host, port))

    async def _run(self, factory: Callable[[], asyncio.BaseProtocol], plan: Plan, host: str,
                   port: int) -> None:
        try:
            transport, protocol, entry = await dial(self.ctx, plan, host, port, factory)
        except UpstreamError as exc:
            self.owner.connect_failed(exc)
            return
        self.entry = entry
        self.owner.connected(transport, protocol)
        relay = getattr(protocol, "relay", None)
        if relay is not None:  # the owner started its relay: count its bytes for the supplier
            self.ctx.upstreams.watch(relay.flow, entry.upstream_id)

    def cancel(self) -> None:
        self.task.cancel()


async def dial(ctx: Context, plan: Plan, host: str, port: int, factory: Callable[[], Any]
               ) -> tuple[asyncio.Transport, Any, UpstreamEntry]:
    """Try the plan's suppliers in turn; UpstreamError 502 ``upstream_failed`` (``sticky_gone`` for a
    strict session) when none gave the tunnel."""
    directory = ctx.upstreams
    timeout = ctx.settings.connect_timeout
    tried = []
    for attempt in plan.attempts:
        try:
            transport, protocol = await open_through(attempt.hop, host, port, factory, timeout)
        except HopFailed as exc:
            directory.failed(attempt.entry)
            tried.append(exc.reason)
            continue
        directory.succeeded(plan, attempt.entry)
        return transport, protocol, attempt.entry
    if plan.strict:
        raise UpstreamError(STRICT_GONE, 502, 1, STICKY_GONE)
    message = f"every upstream supplier failed ({', '.join(tried)}) for {host}:{port}"
    raise UpstreamError(message, 502, 1, POOL_FAILED)
