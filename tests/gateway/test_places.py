"""Issue 36: the router's region/city/asn narrowing over a pool's places, and its refusals (unit)."""

from __future__ import annotations

import random
import uuid

import pytest

from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import parse_username
from proxyplane.gateway.routing import Router, RoutingError
from proxyplane.gateway.store_load import ExitPool

PLACES = {
    "127.0.0.2": ("de", ("bavaria", "by", "munich", 64496)),
    "127.0.0.3": ("de", ("bavaria", "by", "nuremberg", 64497)),
    "127.0.0.4": ("de", ("saxony", "sn", "leipzig", 64496)),
    "127.0.0.5": ("us", ("california", "ca", "sanjose", 64510)),
    "127.0.0.6": ("de", ("", "", "", 0)),  # no place known: never chosen for a place target
}


def grant(username: str) -> tuple[Grant, ExitPool]:
    located = {ip: p for ip, (_, p) in PLACES.items()}
    exits = ExitPool({ip: c for ip, (c, _) in PLACES.items()}, located=located)
    entry = ServiceEntry("svc-" + uuid.uuid4().hex[:6], "rotating", "u", "p", exit_ips=exits,
                         session_mode="rotating")  # type: ignore[arg-type]
    return Grant(entry, parse_username(username)), exits


def chosen(router: Router, username: str) -> set[str]:
    g, _ = grant(username)
    return {router.choose(g, None) for _ in range(60)}


def refusal(router: Router, username: str) -> RoutingError:
    g, _ = grant(username)
    with pytest.raises(RoutingError) as caught:
        router.choose(g, None)
    assert caught.value.status == 407 and caught.value.reason == "geo"
    return caught.value


def test_targets_narrow_the_pool() -> None:
    router = Router(rng=random.Random(5))
    assert chosen(router, "u-country-de-region-by") == {"127.0.0.2", "127.0.0.3"}
    assert chosen(router, "u-country-de-state-Saxony") == {"127.0.0.4"}
    assert chosen(router, "u-asn-64496") == {"127.0.0.2", "127.0.0.4"}
    assert chosen(router, "u-country-us-city-san_jose") == {"127.0.0.5"}


def test_refusals_name_the_option_and_what_exists() -> None:
    router = Router()
    assert str(refusal(router, "u-country-de-city-paris")) == (
        "username option 'city': no exit in 'paris' (cities in DE: leipzig, munich, nuremberg)")
    assert "'region'" in str(refusal(router, "u-country-us-region-texas")) and "california" in str(
        refusal(router, "u-country-us-region-texas"))
    combo = str(refusal(router, "u-country-de-region-sn-city-munich"))  # both exist, not together
    assert combo.startswith("username option 'city': no exit in 'munich' in region 'sn'")
    assert "leipzig" in combo
    assert "ASNs in DE: 64496, 64497" in str(refusal(router, "u-country-de-asn-1"))
    assert "'asn'" in str(refusal(router, "u-country-de-city-leipzig-asn-64497"))
