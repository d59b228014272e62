"""Issue 36 (3): sticky sessions of 1 minute to 24 hours and the strict flag, on the router a node uses
alone (Router), as one of its workers (SharedRouter over the host's shared table) and as the store sync's
router (SharedRouter without a table)."""

from __future__ import annotations

import random
import uuid

import pytest

from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import parse_username
from proxyplane.gateway.routing import STICKY_GONE, Router, RoutingError
from proxyplane.gateway.shared_counts import SharedRegion
from proxyplane.gateway.shared_sticky import SharedSticky
from proxyplane.gateway.sticky_sync import SharedRouter
from proxyplane.gateway.store_load import ExitPool


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def grant(exits: ExitPool, username: str) -> Grant:
    entry = ServiceEntry("svc-" + uuid.uuid4().hex[:6], "rotating", "u", "p", exit_ips=exits,
                         session_mode="rotating")  # type: ignore[arg-type]
    return Grant(entry, parse_username(username))


def routers(clock: Clock) -> list[Router]:
    shared = SharedSticky(SharedRegion(1 << 20), 1024)
    return [Router(clock, random.Random(3)), SharedRouter(clock), SharedRouter(clock, shared)]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_day_long_session_sticks_until_it_ends(which: int) -> None:
    clock = Clock()
    router = routers(clock)[which]
    exits = ExitPool({f"127.0.0.{n}": "us" for n in range(2, 12)})
    g = grant(exits, "u-session-s1-ttl-24h")
    first = router.choose(g, None)
    clock.now += 23 * 3600 + 3599  # a second before the day ends: the same exit
    assert router.choose(g, None) == first
    session = next(s for s in router.list_sessions(g.service.service_id) if s.sid == "s1")
    assert session.expires - session.started == 24 * 3600
    clock.now += 2  # over: a new session (which may draw the same exit), started now
    router.choose(g, None)
    renewed = next(s for s in router.list_sessions(g.service.service_id) if s.sid == "s1")
    assert renewed.started == clock.now and renewed.expires == clock.now + 24 * 3600


@pytest.mark.parametrize("which", [0, 1, 2])
def test_strict_session_errors_when_its_exit_is_gone(which: int) -> None:
    clock = Clock()
    router = routers(clock)[which]
    exits = ExitPool({"127.0.0.2": "us", "127.0.0.3": "us", "127.0.0.4": "us"})
    strict = grant(exits, "u-session-keep-ttl-90m-strict-1")
    loose = Grant(strict.service, parse_username("u-session-move-ttl-90m"))
    pinned, moving = router.choose(strict, None), router.choose(loose, None)
    for ip in {pinned, moving}:
        del exits[ip]  # the exits leave the pool (retired, or this node lost them)
    exits.version += 1
    with pytest.raises(RoutingError) as caught:
        router.choose(strict, None)
    assert caught.value.reason == STICKY_GONE and caught.value.status == 502
    assert "strict" in str(caught.value)
    assert router.choose(loose, None) in exits  # not strict: moved to an exit still there
    clock.now += 90 * 60  # once the strict session is over, its sid starts afresh
    assert router.choose(strict, None) in exits
