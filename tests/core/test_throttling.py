"""The throttle policy's arithmetic (core/throttling.py): a leaky bucket that slows, never locks."""

from __future__ import annotations

from proxyplane.core.throttling import MemoryBuckets, Policy, decide

POLICY = Policy("t", burst=3, drain_seconds=10)


def test_burst_then_one_attempt_per_drain_interval() -> None:
    b = MemoryBuckets(POLICY)
    for _ in range(3):
        assert b.check("k", 0.0).allowed
        b.record_failure("k", 0.0)
    refused = b.check("k", 0.0)
    assert not refused.allowed and refused.retry_after == 10.0 and refused.retry_after_header == "10"
    assert not b.check("k", 9.9).allowed
    assert b.check("k", 10.0).allowed  # slowed, not locked: one more attempt every 10 s
    b.record_failure("k", 10.0)
    assert b.check("k", 15.0).retry_after == 5.0
    assert b.check("other", 0.0).allowed  # keys are independent


def test_decide_reports_the_longest_wait() -> None:
    slow = Policy("slow", burst=1, drain_seconds=60)
    fast = Policy("fast", burst=1, drain_seconds=5)
    d = decide([("a", fast, 1.0), ("b", slow, 1.0), ("c", fast, 0.0)])
    assert not d.allowed and d.key == "b" and d.retry_after == 60.0
    assert decide([("c", fast, 0.0)]).allowed


def test_success_resets_only_where_the_policy_says() -> None:
    resets = MemoryBuckets(Policy("r", burst=1, drain_seconds=60, reset_on_success=True))
    keeps = MemoryBuckets(Policy("k", burst=1, drain_seconds=60))
    for b in (resets, keeps):
        b.record_failure("x", 0.0)
        b.record_success("x")
    assert resets.check("x", 1.0).allowed
    assert not keeps.check("x", 1.0).allowed


def test_memory_is_bounded() -> None:
    b = MemoryBuckets(POLICY, max_keys=100)
    for i in range(1000):
        b.record_failure(f"127.1.{i // 256}.{i % 256}", float(i))
    assert len(b) <= 100
    assert b.level("127.1.3.231", 999.0) == 1.0  # the newest stay
