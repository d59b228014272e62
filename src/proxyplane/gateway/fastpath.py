"""The tunnel engine's decision cache (``csrc/fast.c``): a decision this module lets the engine repeat.

After Python decided a connection on its own path (tunnels.py / tunnel_socks.py) and the decision depends
on nothing but the handshake bytes, the listener, the local and client addresses and the platform's tables,
the engine keeps it under the exact key of that event. The next connection with the same key is opened by
the engine alone (no Python event until it ends); what it relays is handed to the meter at every harvest.
Eligible (docs/decisions/connection-setup.md): a service without a client-address limit or an upstream
pool (one with a quota or a connection limit too: below; a sub-user's: further below), an exit chosen
statelessly (static, pinned, or rotating without a session: ``Router.fixed_pool``), an IP-literal
destination the destination policy permits on a port that is not the platform's own.

Every decision stays Python's: entries are forgotten when the access table, the destination policy or the
router's local prefixes change, when a listener closes, and when the auth throttle counts a failure from
the client's address (IPv6: its /64). A refusal is never cached, so every refusal reason is Python's own.
The engine opens a fast tunnel only with a descriptor-budget slot Python charged (``Capacity.acquire``)
and lent it; slots are lent only while the node uses under half its budget and the service under half its
share, and taken back when unused. The limiter's count of the (unlimited) service follows the engine's
open fast tunnels at every sweep.

A service with a quota (issue 32) is cached too: its fast tunnels' requests and bytes reach the quota's
counters at every harvest, as its Python tunnels' do, and right after it (a meter check, as
``subusers.cut_refused`` for Python's tunnels) a service whose quota is used up loses its entries and its
open fast tunnels (``fast_cut``: each metered ``quota_exhausted``); its next connection is Python's,
refused with 402 / the failed-auth reply.

A service with a connection limit is cached too: every slot lent to the engine for it is also a limiter
slot Python took (only while the service uses under half its limit), so the engine never passes the
limit; at the limit Python's path takes the unused ones back before it refuses (``reclaim``).

A sub-user (its derived entry, subusers.py) is cached when neither it nor its service has a connection or
client-address limit: its fast tunnels are metered under its metering id (so its traffic limit and its
service's quota count them, as its Python tunnels), the limiter counts them for it and for its service,
and after every harvest a sub-user refused now (traffic limit, disabled: ``subusers.refusal``; its
service's quota) loses its entries and open fast tunnels like a quota service, each metered with that
reason as ``subusers.cut_refused`` meters a Python tunnel it ends.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import engine_module
from .access import Grant
from .capacity import PER_CONNECTION
from .quotas import reason, refused
from .routing import RoutingError
from .subusers import refusal
from .upstream import literal_family

if TYPE_CHECKING:
    from .tunnel_records import Tunnel
    from .tunnels import TunnelEngine

LEASE = 32  # budget slots lent to the engine per service at a time


@dataclass(slots=True)
class Record:
    """What Python needs when the engine hands back a connection it opened by an entry (a failed
    connect) or a request under credentials it accepted, and what the entry's counts are metered as."""

    grant: Grant
    static_ip: str | None
    socks: bool
    host: str = ""
    port: int = 0


class FastPath:
    def __init__(self, tunnels: TunnelEngine) -> None:
        self.tunnels = tunnels
        self.ctx = tunnels.ctx
        self.engine = tunnels.engine
        self.records: dict[int, Record] = {}
        self.svc_ids: dict[str, int] = {}
        self.svc_names: list[str] = []
        self.lent: dict[int, int] = {}  # svc -> slots charged to the capacity for the engine (used or not)
        self.counted: dict[int, int] = {}  # svc -> open fast tunnels the limiter counts
        self.ids = itertools.count(1)
        self.on = True
        self.quota_ok = engine_module.has(tunnels.t, "cache_cut")  # quota services, sub-users (fast_cut)
        self.checked: set[int] = set()  # cached quota services and sub-users: checked after every harvest
        self.holding: set[int] = set()  # limited services whose lent slots hold limiter slots too
        self.ctx.reclaim = self.reclaim  # admission.take_slot asks before refusing at a connection limit
        ctx = self.ctx
        ctx.access.on_change(self.forget)  # type: ignore[attr-defined]  # AccessTable (tunnels.py checks)
        ctx.destinations.on_change(self.forget)
        ctx.router.on_change(self.forget)
        self.throttle = ctx.auth_throttle
        self.throttle.on_failure(self.forget_client)
        ctx.meter.add_source(self.harvest)
        ctx.meter.add_check(self.cut_refused)

    def _same_throttle(self) -> None:
        """The context's auth throttle was replaced (tests do): forget everything, listen to the new one."""
        if self.ctx.auth_throttle is not self.throttle:
            self.forget()
            self.throttle = self.ctx.auth_throttle
            self.throttle.on_failure(self.forget_client)

    # -- what may be cached --
    def _eligible(self, grant: Grant) -> bool:
        self._same_throttle()
        entry = grant.service
        parent = entry.parent
        if parent is not None and (entry.subuser is None or not self.quota_ok or entry.max_connections
                                   or parent.max_connections or parent.max_client_ips):
            return False  # a sub-user: only without connection / client-address limits (its or its service's)
        return (self.on and (entry.quota is None or self.quota_ok) and entry.active
                and entry.upstream_pool is None and not entry.max_client_ips)

    def _svc_of(self, grant: Grant) -> int:
        svc = self._svc(grant.service.service_id)
        if grant.service.quota is not None or grant.service.subuser is not None:
            self.checked.add(svc)
        return svc

    def _svc(self, service_id: str) -> int:
        svc = self.svc_ids.get(service_id)
        if svc is None:
            svc = self.svc_ids[service_id] = len(self.svc_names)
            self.svc_names.append(service_id)
        return svc

    def _lend(self, svc: int, service_id: str, limit: int) -> bool:
        """Top the engine's unused slots of the service up to LEASE, while the node is under half its
        budget and the service under half its share (a service with a connection limit: under half its
        limit too, each slot also taken from the limiter); whether the engine holds any."""
        held = self.lent.get(svc, 0)
        if held and (svc in self.holding) != (limit > 0):  # lent before its limit came or went
            return False  # nothing cached until the sweep took those slots back
        unused = held - self.counted.get(svc, 0)
        want = LEASE - unused
        n = 0
        while n < want and self._one_slot(service_id, limit):
            n += 1
        if n:
            self.lent[svc] = held + n
            if limit:
                self.holding.add(svc)
            self.engine.fast_lease(svc, n)
        return held + n > 0

    def _one_slot(self, service_id: str, limit: int) -> bool:
        cap, limiter = self.ctx.capacity, self.ctx.limiter
        if (cap.base + cap.total + PER_CONNECTION) * 2 > cap.budget \
                or (cap.charged.get(service_id, 0) + PER_CONNECTION) * 2 > cap.service_cap:
            return False
        if limit and (limiter.current(service_id) + limiter.others(service_id) + 1) * 2 > limit:
            return False
        if not cap.acquire(service_id):
            return False
        if limit and not limiter.acquire(service_id, limit):
            cap.release(service_id)
            return False
        return True

    def _give_back(self, svc: int, n: int) -> int:
        """Take back up to ``n`` of the engine's unused slots of ``svc``: the budget's (and the limiter's,
        held for a limited service); how many."""
        back = self.engine.fast_take(svc, n) if n > 0 else 0
        name = self.svc_names[svc]
        held = svc in self.holding
        for _ in range(back):
            self.ctx.capacity.release(name)
            if held:
                self.ctx.limiter.release(name)
        self.lent[svc] = self.lent.get(svc, 0) - back
        if not self.lent[svc]:
            del self.lent[svc]
            self.holding.discard(svc)
        return back

    def reclaim(self, service_id: str) -> bool:
        """The service's connection limit refused a connection on Python's path: the slots its cached
        tunnels hold unused come back first (so the limit counts only open connections); whether any."""
        svc = self.svc_ids.get(service_id)
        if svc is None or svc not in self.holding:
            return False
        return self._give_back(svc, self.lent.get(svc, 0)) > 0

    # -- filling (called right after Python's own decision, before it answers the connection) --
    def fill_open(self, cid: int, rec: Tunnel) -> None:
        """Cache the decision to open ``rec``'s tunnel (CONNECT head / SOCKS5 request of ``cid``)."""
        grant, host, port = rec.grant, rec.host, rec.port
        if not self._eligible(grant) or port in self.ctx.destinations.own_ports:
            return
        family = literal_family(host)
        if family is None:
            return
        try:
            exits = self.ctx.router.fixed_pool(grant, rec.static_ip, family)
        except RoutingError:
            return
        if not exits or rec.exit_ip not in exits:
            return
        sid = grant.service.service_id
        svc = self._svc_of(grant)
        if not self._lend(svc, sid, grant.service.max_connections):
            return
        entry_id = next(self.ids)
        if self.engine.fast_put(cid, self.tunnels.t.FAST_OPEN, entry_id, svc, rec.socks, host, port, exits):
            self.records[entry_id] = Record(grant, rec.static_ip, rec.socks, host, port)

    def fill_auth(self, cid: int, grant: Grant, static_ip: str | None) -> None:
        """Cache SOCKS5 credentials (or a no-auth greeting's whitelist grant) just accepted for ``cid``."""
        if not self._eligible(grant):
            return
        entry_id = next(self.ids)
        svc = self._svc_of(grant)
        if self.engine.fast_put(cid, self.tunnels.t.FAST_AUTH, entry_id, svc, True, "", 0, ()):
            self.records[entry_id] = Record(grant, static_ip, True)

    # -- forgetting --
    def forget(self) -> None:
        self.engine.fast_forget(None)

    def forget_client(self, client_ip: str) -> None:
        try:
            self.engine.fast_forget(client_ip)
        except ValueError:
            self.engine.fast_forget(None)

    def stop(self) -> None:
        """No more fast tunnels (a drain or shutdown): forget every entry, return the unused slots."""
        self.on = False
        self.forget()
        self.sweep()

    # -- what the engine hands back --
    def record(self, entry_id: int) -> Record | None:
        return self.records.get(entry_id)

    def take_back(self, cid: int, entry_id: int, exit_ip: str) -> bool:
        """A tunnel the engine opened by an entry could not connect: it is Python's from here, as if
        Python had opened it (the engine gave its budget slot back: the tunnel holds none)."""
        from .tunnel_records import Tunnel

        known = self.records.get(entry_id)
        if known is None:
            return False
        rec = self.tunnels.conns[cid] = Tunnel(known.grant, known.static_ip, known.socks)
        rec.host, rec.port, rec.exit_ip = known.host, known.port, exit_ip
        rec.flow = self.ctx.meter.open_flow(known.grant.service.service_id, known.host, requests=1,
                                            connections=1)
        return True

    def unused_slots(self) -> int:
        """Budget slots charged for the engine's tunnels that none holds now."""
        return max(sum(self.lent.values()) - int(self.engine.stats()["fast"]), 0)

    def harvest(self) -> None:
        """The fast tunnels' requests, connections and bytes into the meter (a meter source)."""
        counts, freed = self.engine.fast_counts()
        if counts:
            record = self.ctx.meter.record
            records = self.records
            for entry_id, requests, connections, up, down in counts:
                rec = records.get(entry_id)
                if rec is not None:
                    record(rec.grant.service.service_id, rec.host, requests=requests, connections=connections,
                           bytes_up=up, bytes_down=down)
        for entry_id in freed:
            self.records.pop(entry_id, None)

    def cut_refused(self) -> None:
        """After every harvest: a cached service over its quota, or a cached sub-user refused now (its
        traffic limit, disabled), loses its entries and fast tunnels (as subusers.cut_refused ends
        Python's tunnels)."""
        if not self.checked:
            return
        access, counts, meter = self.ctx.access, self.ctx.meter.sub_counts, self.ctx.meter
        for svc in list(self.checked):
            sid = self.svc_names[svc]
            entry = access.get(sid)
            if entry is None or (entry.quota is None and entry.subuser is None):  # deleted / no quota now:
                self.checked.discard(svc)  # its tunnels end by themselves (an access-table write forgot
                continue  # its entries)
            why: str | None = reason(entry) if refused(entry, counts) else None  # quota / balance
            if why is None and entry.subuser is not None:
                sub_why = refusal(entry, None, counts)  # subuser_traffic_limit, subuser_disabled
                why = str(sub_why) if sub_why is not None else None
            if why is None:
                continue
            self.checked.discard(svc)  # cached again (and checked) when Python admits it again
            for entry_id in self.engine.fast_cut(svc):
                rec = self.records.get(entry_id)
                if rec is not None:
                    meter.record(sid, rec.host, error=why)

    def sweep(self) -> None:
        """Every second: the limiter follows the open fast tunnels; unused slots go back to the budget
        (all of them for a service that opened none since the last sweep, else those beyond LEASE)."""
        self._same_throttle()
        limiter = self.ctx.limiter
        for svc, unused, open_, opened, _closed in self.engine.fast_services():
            sid = self.svc_names[svc]
            counted = self.counted.get(svc, 0)
            held = svc in self.holding  # a limited service's lent slots hold the limiter's already
            # a sub-user's tunnel counts for it and its service (admission.take_slot / release_slot)
            ids = (sid, sid.partition("/")[0]) if "/" in sid else (sid,)
            for _ in range(open_ - counted if not held else 0):
                for one in ids:
                    limiter.acquire(one, 0)
            for _ in range(counted - open_ if not held else 0):
                for one in ids:
                    limiter.release(one)
            self.counted[svc] = open_
            keep = 0 if (not opened or not self.on) else LEASE
            if held:  # kept only while the service stays under half its limit
                entry = self.ctx.access.get(sid)
                limit = entry.max_connections if entry is not None else 0
                if limit <= 0 or (limiter.current(sid) + limiter.others(sid)) * 2 > limit:
                    keep = 0
            if unused > keep:
                self._give_back(svc, unused - keep)

    def status(self) -> dict[str, Any]:
        return {"records": len(self.records), "lent": sum(self.lent.values())}
