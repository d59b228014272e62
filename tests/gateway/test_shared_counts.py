"""The tables the workers of one gateway host share (shared_counts.py, shared_sticky.py): open addressing
with collisions and backward-shift deletion, worker death, a full table, and real forked processes
competing for a connection limit."""

from __future__ import annotations

import os
import random
import time

from proxyplane.gateway.access import ServiceEntry
from proxyplane.gateway.limits import WorkerLimiter
from proxyplane.gateway.routing import Pool
from proxyplane.gateway.shared_counts import SharedCounts, SharedRegion, StripedCounts, WorkerStats
from proxyplane.gateway.shared_sticky import SharedSticky, sticky_key
from proxyplane.gateway.sticky_sync import SharedRouter


def counts_table(workers: int = 2, capacity: int = 64) -> SharedCounts:
    region = SharedRegion(1 << 22)
    return SharedCounts(region, workers, capacity, WorkerStats(region, workers))


def test_acquire_is_check_and_increment_per_host() -> None:
    t = counts_table()
    assert [t.acquire("svc", w, 3) for w in (0, 1, 0, 1)] == [True, True, True, False]
    assert t.total("svc") == 3
    assert t.acquire("svc", 1, 3, others=0) is False
    assert t.acquire("other", 1, 2, others=2) is False  # the other hosts hold the rest
    assert t.acquire("free", 1, 0) is True  # 0: unlimited
    assert t.snapshot() == {"svc": 3, "free": 1}
    assert t.release("svc", 1) and t.total("svc") == 2
    assert t.release("svc", 1) is False  # worker 1 holds none any more: nothing changes
    assert t.total("svc") == 2
    t.check()


def test_collisions_and_deletion_against_a_model() -> None:
    """A 16-slot table under random traffic of 13 services (all probe chains overlap and wrap): it
    agrees with a plain dict after every step, and every entry stays reachable from its home."""
    t = counts_table(workers=3, capacity=16)
    model: dict[tuple[str, int], int] = {}
    rng = random.Random(7)
    services = [f"svc-{i}" for i in range(13)]
    for step in range(4000):
        sid, w = rng.choice(services), rng.randrange(3)
        if rng.random() < 0.55:
            total = sum(n for (s, _), n in model.items() if s == sid)
            ok = t.acquire(sid, w, 5)
            assert ok is (total < 5), step
            if ok:
                model[(sid, w)] = model.get((sid, w), 0) + 1
        else:
            held = model.get((sid, w), 0)
            assert t.release(sid, w) is (held > 0)
            if held:
                model[(sid, w)] = held - 1
        if step % 50 == 0:
            t.check()
    expected: dict[str, int] = {}
    for (sid, _), n in model.items():
        if n:
            expected[sid] = expected.get(sid, 0) + n
    assert t.snapshot() == expected
    t.check()


def test_many_services_then_all_released_leaves_an_empty_table() -> None:
    t = counts_table(capacity=1 << 14)
    services = [f"{i:08d}-aaaa-bbbb-cccc-{i:012d}" for i in range(12_000)]
    for i, sid in enumerate(services):
        assert t.acquire(sid, i % 2, 1) is True
    assert len(t.snapshot()) == 12_000
    assert t.acquire(services[5], 1, 1) is False
    t.check()
    for i, sid in enumerate(services):
        assert t.release(sid, i % 2) is True
    assert t.snapshot() == {} and t._used() == 0


def test_striped_table_keeps_each_limit_exact() -> None:
    region = SharedRegion(1 << 22)
    t = StripedCounts(region, 2, 1 << 10, WorkerStats(region, 2), stripes=16)
    services = [f"svc-{i}" for i in range(300)]
    for sid in services:
        assert [t.acquire(sid, w, 2) for w in (0, 1, 1)] == [True, True, False]
    assert len({id(t.stripe(sid)) for sid in services}) == 16  # spread over every stripe
    assert t.snapshot() == dict.fromkeys(services, 2)
    t.check()
    assert t.drop_worker(1) == 300 and t.total("svc-7") == 1
    for sid in services:
        assert t.release(sid, 0)
    assert t.snapshot() == {}


def test_a_dead_workers_connections_are_subtracted() -> None:
    t = counts_table(capacity=16)
    for i in range(10):
        t.acquire(f"s{i}", 0, 0)
        t.acquire(f"s{i}", 1, 0)
        t.acquire(f"s{i}", 1, 0)
    assert t.drop_worker(1) == 20
    assert t.snapshot() == {f"s{i}": 1 for i in range(10)}
    t.check()
    assert t.drop_worker(0) == 10 and t.snapshot() == {}


def test_worker_limiter_unlimited_services_stay_local() -> None:
    t = counts_table()
    a, b = WorkerLimiter(t, 0, "host-x"), WorkerLimiter(t, 1, "host-x")
    assert a.acquire("free", 0) and a.acquire("free", 0) and b.acquire("capped", 2) and a.acquire("capped", 2)
    assert b.acquire("capped", 2) is False  # the host total
    assert t.snapshot() == {"capped": 2}  # the unlimited service never took the lock
    assert a.snapshot() == {"capped": 2, "free": 2} and b.current("capped") == 2
    a.release("free")
    a.release("capped")
    a.report()
    assert t.stats is not None and (t.stats.get(0)["admitted"], t.stats.get(0)["open"]) == (3, 1)
    assert b.acquire("capped", 2) is True


def test_a_full_table_counts_per_worker() -> None:
    t = counts_table(capacity=8)  # 7/8 full: 7 services
    limiter = WorkerLimiter(t, 0, "host-x")
    for i in range(7):
        assert limiter.acquire(f"s{i}", 1)
    assert limiter.acquire("s7", 1) is True  # no room: counted in this worker
    assert limiter.acquire("s7", 1) is False
    assert limiter.current("s7") == 1 and "s7" not in t.snapshot()
    limiter.release("s7")
    assert limiter.current("s7") == 0 and limiter.acquire("s7", 1) is True


def test_forked_workers_never_exceed_the_limit() -> None:
    """Four real processes take and give back slots of one service with a limit of 3 as fast as they
    can; each checks the host total after every admission; together they were admitted many times."""
    t = counts_table(workers=4, capacity=64)
    pids = []
    for w in range(4):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                held = admitted = 0
                deadline = time.monotonic() + 1.0
                while time.monotonic() < deadline:
                    if held < 2 and t.acquire("svc", w, 3):
                        held += 1
                        admitted += 1
                        if t.total("svc") > 3:
                            code = 3
                    elif held:
                        t.release("svc", w)
                        held -= 1
                while held:
                    t.release("svc", w)
                    held -= 1
                assert t.stats is not None
                t.stats.set_counts(w, admitted, 0)
            except BaseException:
                code = 1
            os._exit(code)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    assert codes == [0, 0, 0, 0]
    assert t.total("svc") == 0 and t.snapshot() == {}
    assert t.stats is not None
    per_worker = [t.stats.get(w)["admitted"] for w in range(4)]
    assert all(a > 100 for a in per_worker), per_worker


def sticky_table(capacity: int = 16) -> SharedSticky:
    return SharedSticky(SharedRegion(1 << 20), capacity)


def test_sticky_table_put_get_expire_delete() -> None:
    s = sticky_table()
    k = sticky_key("svc", "a")
    with s.lock:
        assert s.get(k, 100.0) is None
        assert s.put(k, "127.0.1.3", 100.0, 160.0, 100.0)
        assert s.get(k, 150.0) == ("127.0.1.3", 100.0, 160.0)
        assert s.get(k, 160.0) is None  # expired
        assert s.delete(k) and not s.delete(k)
        assert s.get(k, 150.0) is None


def test_sticky_table_collisions_reuse_and_sweep() -> None:
    s = sticky_table(capacity=16)
    keys = [sticky_key("svc", f"sid{i}") for i in range(14)]
    with s.lock:
        for i, k in enumerate(keys):
            expires = 10.0 if i % 2 else 1000.0  # odd ones expire at 10
            assert s.put(k, f"127.0.2.{i}", 0.0, expires, 0.0)
        assert s._used() == 14
        # at time 20 the expired entries' slots take new sessions without growing the table
        for i in range(5):
            assert s.put(sticky_key("svc", f"new{i}"), "::1", 20.0, 500.0, 20.0)
        assert s._used() == 14
        for i, k in enumerate(keys):
            got = s.get(k, 20.0)
            assert (got is None) if i % 2 else (got == (f"127.0.2.{i}", 0.0, 1000.0))
    assert s.sweep(20.0) == 2  # the 7 expired minus the 5 slots reused
    assert s.live(20.0) == 12 and s._used() == 12
    with s.lock:
        assert all(s.get(sticky_key("svc", f"new{i}"), 30.0) == ("::1", 20.0, 500.0) for i in range(5))
    assert s.sweep(2000.0) == 12 and s._used() == 0


def test_two_workers_routers_agree_on_a_sid() -> None:
    """Two workers' routers over one shared table: a sid gets one exit IP whichever worker sees it
    first, a forgotten (ended) session is gone for both, and an API rotation adopted by one is used
    by the other."""
    shared = sticky_table(capacity=1 << 10)
    now = [1000.0]
    a, b = SharedRouter(lambda: now[0], shared), SharedRouter(lambda: now[0], shared)
    entry = ServiceEntry(
        "svc",
        "rotating",
        "u",
        "p",
        session_mode="sticky",
        exit_ips={f"127.0.1.{i}": "de" for i in range(1, 60)},
    )
    for sid in (f"s{i}" for i in range(50)):
        assert a._sticky(entry, sid, Pool(entry.exit_ips), None) == b._sticky(
            entry, sid, Pool(entry.exit_ips), None
        )
    ip = b._sticky(entry, "s1", Pool(entry.exit_ips), None)
    assert ("svc", "s1") in a.dirty and ("svc", "s1") not in b.dirty  # a created it: a writes it
    b.adopt("svc", "s1", "127.0.1.77", now[0], now[0] + 60, force=True)  # the API rotated it
    assert a._sticky(entry, "s1", Pool([*entry.exit_ips, "127.0.1.77"]), None) == "127.0.1.77" != ip
    a.forget("svc", "s1")
    fresh = b._sticky(entry, "s1", Pool(entry.exit_ips), None)
    assert a._sticky(entry, "s1", Pool(entry.exit_ips), None) == fresh
    now[0] += entry.sticky_ttl + 1  # expired: a new choice, again the same for both
    assert b._sticky(entry, "s2", Pool(entry.exit_ips), None) == a._sticky(
        entry, "s2", Pool(entry.exit_ips), None
    )


def test_sticky_lock_free_reads_never_see_a_torn_slot() -> None:
    """A forked writer rewrites and deletes colliding sessions as fast as it can (backward shifts move
    entries between slots); lock-free ``peek``s meanwhile only ever return a session exactly as it was
    written for that key (its IP names the key, started and expires belong together)."""
    s = sticky_table(capacity=16)
    keys = [sticky_key("svc", f"sid{i}") for i in range(12)]
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            rng = random.Random(3)
            deadline, n = time.monotonic() + 0.8, 0
            while time.monotonic() < deadline:
                n += 1
                i = rng.randrange(len(keys))
                with s.lock:
                    if rng.random() < 0.3:
                        s.delete(keys[i])
                    else:
                        s.put(keys[i], f"10.0.{i}.{n % 250}", float(n), float(n) + 1e9, 0.0)
        except BaseException:
            code = 1
        os._exit(code)
    seen = 0
    rng = random.Random(4)
    deadline = time.monotonic() + 0.8
    while time.monotonic() < deadline:
        i = rng.randrange(len(keys))
        got = s.peek(keys[i], 0.0)
        if got is not None:
            seen += 1
            ip, started, expires = got
            assert ip.split(".")[2:] == [str(i), str(int(started) % 250)], got
            assert expires == started + 1e9, got
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert seen > 100
