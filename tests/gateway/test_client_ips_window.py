"""gateway/client_ips.ClientIps on its own, with a clock the test moves: the window, both policies, and
two processes exchanging reports (what node_limits.py carries through the store): an address one process
forgot (newest_wins) is forgotten by the other too, and one seen again later counts again."""

from __future__ import annotations

from proxyplane.gateway.client_ips import ClientIps, limit_of


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_window_and_refuse_new() -> None:
    clock = Clock()
    ips = ClientIps(window=60, clock=clock)
    assert ips.admit("s", "a", 2, "refuse_new") and ips.admit("s", "b", 2, "refuse_new")
    assert not ips.admit("s", "c", 2, "refuse_new") and ips.admit("s", "a", 2, "refuse_new")
    clock.now += 45
    assert ips.admit("s", "a", 2, "refuse_new")  # a seen again; b ages out of the window at +60
    clock.now += 20
    assert ips.admit("s", "c", 2, "refuse_new") and set(ips.active("s")) == {"a", "c"}
    assert not ips.admit("s", "d", 2, "refuse_new")
    assert ips.admit("other", "d", 2, "refuse_new")  # per service


def test_newest_wins_across_two_processes() -> None:
    clock = Clock()
    one, two = ClientIps(window=60, clock=clock), ClientIps(window=60, clock=clock)

    def exchange() -> None:
        a, b = one.report(), two.report()
        one.set_others([b])
        two.set_others([a])

    assert one.admit("s", "a", 2, "newest_wins")
    clock.now += 1
    assert one.admit("s", "b", 2, "newest_wins")
    exchange()
    clock.now += 1
    assert two.admit("s", "c", 2, "newest_wins")  # full: two forgets a (the least recently seen)
    assert set(two.active("s")) == {"b", "c"}
    exchange()
    assert set(one.active("s")) == {"b", "c"}  # one forgot a too
    clock.now += 1
    assert one.admit("s", "a", 2, "newest_wins")  # a is new again: b (now the oldest) goes
    exchange()
    assert set(one.active("s")) == set(two.active("s")) == {"a", "c"}


def test_limit_of_parameters() -> None:
    assert limit_of({}) == (0, "refuse_new")
    assert limit_of({"client_ip_limit": {"max": 3, "policy": "newest_wins"}}) == (3, "newest_wins")
    assert limit_of({"client_ip_limit": {"max": 0}}) == (0, "refuse_new")
    assert limit_of({"client_ip_limit": {"max": True}}) == (0, "refuse_new")
    assert limit_of({"client_ip_limit": {"max": 2, "policy": "x"}}) == (2, "refuse_new")
