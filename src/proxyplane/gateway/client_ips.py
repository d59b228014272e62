"""Anti-sharing in the gateway (issue 32.5): distinct client addresses per service within a window.

A service with ``max_client_ips`` N (``ServiceEntry``, from ``parameters["client_ip_limit"]``) may be used
from at most N client addresses seen within ``window`` seconds. ``ClientIps.admit`` runs at
authentication (access.authenticate: every HTTP request, CONNECT and SOCKS5 login, on both tunnel paths)
and only for a service with a limit, so an unlimited service's hot path is one attribute test. A sub-user
counts for its service's limit.

An address already in the window is admitted (and seen again). A new one, with N in the window:
``refuse_new`` refuses it; ``newest_wins`` admits it and forgets the least recently seen address (a
tombstone, so the node that saw it forgets it too; its open tunnels are not cut: its next request or
connection counts as new).

Across processes (the workers of a host, other nodes) the addresses travel through the store with the
connection counts (node_limits.py, every ``limit_refresh_seconds``): each process publishes the addresses
it saw (and its tombstones) and takes the others'. The bound is the connection limits' cross-node one:
addresses first seen at the same time on different processes within one refresh may exceed N by what
was free; no new address is admitted until the total is under N again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

CLIENT_IP_LIMIT = "client_ip_limit"  # the refusal's category and Proxy-Status error
CLIENT_IP_TEXT = (
    "client_ip_limit: this service is already used from as many client addresses as its max_client_ips "
    "allows; retry from a known address or raise the limit (PUT /v1/customer/services/{id}/proxy/"
    "client-ip-limit)"
)
Seen = dict[str, float]  # client address -> last seen (time.time()); negative: forgotten at -t


def limit_of(params: Mapping[str, object]) -> tuple[int, str]:
    """(max_client_ips, policy) of a service's parameters (domains/connections/client_ips.py writes
    them); (0, "refuse_new"): no limit."""
    raw = params.get("client_ip_limit")
    if not isinstance(raw, Mapping):
        return 0, "refuse_new"
    most, policy = raw.get("max"), raw.get("policy")
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        return 0, "refuse_new"
    return most, policy if policy == "newest_wins" else "refuse_new"


class ClientIps:
    def __init__(self, window: float = 600.0, clock: Callable[[], float] = time.time) -> None:
        self.window, self.clock = window, clock
        self._own: dict[str, Seen] = {}  # service id -> addresses this process saw (and tombstones)
        self._others: dict[str, Seen] = {}  # the other processes' last report

    def admit(self, service_id: str, ip: str, limit: int, policy: str) -> bool:
        now = self.clock()
        own = self._own.setdefault(service_id, {})
        mark = own.get(ip)
        if mark is not None and mark > 0 and now - mark <= self.window:
            other = self._others.get(service_id, {}).get(ip)
            if other is None or other >= 0 or -other < mark:  # not forgotten by another process since
                own[ip] = now
                return True
        active = self.active(service_id, now)
        if ip in active or len(active) < limit:
            own[ip] = now
            return True
        if policy != "newest_wins":
            return False
        while len(active) >= limit:  # forget the least recently seen until there is room
            oldest = min(active, key=active.__getitem__)
            del active[oldest]
            own[oldest] = -now
        own[ip] = now
        return True

    def active(self, service_id: str, now: float | None = None) -> Seen:
        """The addresses in the window, this process's and the others' (newest sighting of each)."""
        now = self.clock() if now is None else now
        since = now - self.window
        out: Seen = {}
        forgotten: Seen = {}
        for seen in (self._own.get(service_id), self._others.get(service_id)):
            for ip, at in (seen or {}).items():
                if at < 0:
                    forgotten[ip] = max(forgotten.get(ip, 0.0), -at)
                elif at >= since and at > out.get(ip, 0.0):
                    out[ip] = at
        for ip, at in forgotten.items():
            if out.get(ip, now + 1) <= at:
                del out[ip]
        return out

    def report(self) -> dict[str, Seen]:
        """What to publish: per service, the addresses in the window and the tombstones younger than it
        (pruning what is older)."""
        since = self.clock() - self.window
        out: dict[str, Seen] = {}
        for sid in list(self._own):
            seen = {ip: at for ip, at in self._own[sid].items() if abs(at) >= since}
            if seen:
                self._own[sid] = seen
                out[sid] = seen
            else:
                del self._own[sid]
        return out

    def set_others(self, reports: Sequence[Mapping[str, Mapping[str, float]]]) -> None:
        """The other processes' reports, merged (the newest mark of an address wins)."""
        merged: dict[str, Seen] = {}
        for report in reports:
            for sid, seen in report.items():
                into = merged.setdefault(sid, {})
                for ip, at in seen.items():
                    at = float(at)
                    if abs(at) > abs(into.get(ip, 0.0)):
                        into[ip] = at
        self._others = merged
