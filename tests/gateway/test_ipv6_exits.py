"""IPv6 exits from a service's subnets (issue 16.3): the router's draws, the store loading subnets and
following the change log, and end to end in a network namespace (tests/gateway/ipv6_netns.py): 100
rotating requests from 100 distinct addresses of the service's /64 and none from another customer's,
sticky, pinned, HTTP / CONNECT / SOCKS5 on both tunnel paths, a destination without AAAA.

The services are ordered through the REST API (engineer D's proxy_ipv6 selling) from a /56 of
2001:db8::/48 imported as the only stock of a country; pinned is set with PUT .../proxy/sticky/mode."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text, update
from sqlalchemy.engine import make_url

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import subnets as stock_subnets
from proxyplane.gateway import subusers
from proxyplane.gateway.access import AccessTable, Grant, ServiceEntry
from proxyplane.gateway.context import Context, Settings
from proxyplane.gateway.limits import ConnectionLimiter
from proxyplane.gateway.metering import Meter
from proxyplane.gateway.protocol.username import UsernameOptions
from proxyplane.gateway.routing import Router, RoutingError
from proxyplane.gateway.subnets import SubnetExits
from proxyplane.gateway.subusers import SubuserEntry
from proxyplane.platform import Platform
from proxyplane.storage.models.prefixes import StockPrefix
from tests.adapters.legacy.support import auth as legacy_auth
from tests.support import bearer, make_account

from .test_store_changes import store_sync
from .test_store_static import API, eventually

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
_RUN = random.Random()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def subnet_of(address: str) -> str:
    return str(ipaddress.IPv6Network(f"{address}/64", strict=False))


def entry(subnets: dict[str, str], mode: str = "rotating", pin: str | None = None) -> ServiceEntry:
    return ServiceEntry(
        "svc-a",
        "rotating",
        "a",
        "pw",
        SubnetExits(subnets.items()),
        session_mode=mode,  # type: ignore[arg-type]
        pin=pin,
    )


def test_router_draws_from_the_subnet_only() -> None:
    router = Router(rng=random.Random(7))
    grant = Grant(entry({"2001:db8:0:5::/64": "de"}), None)
    drawn = [router.choose(grant, None) for _ in range(2000)]
    assert len(set(drawn)) == 2000
    assert {subnet_of(ip) for ip in drawn} == {"2001:db8:0:5::/64"}
    assert "2001:db8:0:5::" not in drawn  # never the subnet-router anycast address
    # a DNS name or an IPv6 literal: fine; an IPv4 literal destination cannot leave over IPv6
    assert subnet_of(router.choose(grant, None, socket.AF_INET6)) == "2001:db8:0:5::/64"
    with pytest.raises(RoutingError) as refused:
        router.choose(grant, None, socket.AF_INET)
    assert refused.value.reason == "no_ipv6"
    # a session id keeps its address; country narrows the subnets
    sticky = Grant(grant.service, UsernameOptions("a", sid="s1", ttl_minutes=5))
    assert len({router.choose(sticky, None) for _ in range(5)}) == 1
    two = Grant(
        entry({"2001:db8:0:5::/64": "de", "2001:db8:0:6::/64": "us"}), UsernameOptions("a", country="us")
    )
    assert {subnet_of(router.choose(two, None)) for _ in range(50)} == {"2001:db8:0:6::/64"}
    # pinned: the pin, when it is inside a subnet
    pinned = Grant(entry({"2001:db8:0:5::/64": "de"}, "pinned", "2001:db8:0:5::42"), None)
    assert {router.choose(pinned, None) for _ in range(3)} == {"2001:db8:0:5::42"}
    with pytest.raises(RoutingError):
        router.choose(Grant(entry({"2001:db8:0:5::/64": "de"}, "pinned", "2001:db8:0:6::1"), None), None)
    # a /128 "subnet" is its one address; a node whose local prefixes miss the subnet refuses with 503
    assert router.choose(Grant(entry({"2001:db8:0:7::9/128": "de"}), None), None) == "2001:db8:0:7::9"
    router.set_local([ipaddress.ip_network("2001:db8:1::/48")])
    with pytest.raises(RoutingError) as away:
        router.choose(grant, None)
    assert (away.value.reason, away.value.status) == ("not_local", 503)
    router.set_local([ipaddress.ip_network("2001:db8::/48")])
    assert subnet_of(router.choose(grant, None)) == "2001:db8:0:5::/64"
    # a live session rotated through the API: a new address of the subnet
    before = router.choose(sticky, None)
    rotated = router.rotate(grant.service, "s1")
    assert (
        rotated is not None
        and rotated.exit_ip != before
        and subnet_of(rotated.exit_ip) == "2001:db8:0:5::/64"
    )
    # a sub-user limited to some countries draws from the subnets of those countries only
    sub = SubuserEntry(1, "sub-1", "a-sub", "pw", countries=frozenset({"us"}))
    derived = Grant(subusers.derive(two.service, sub, {}), None)
    assert {subnet_of(router.choose(derived, None)) for _ in range(20)} == {"2001:db8:0:6::/64"}


def test_exit_errors_are_counted_per_subnet() -> None:
    """Upstream failures from random addresses of a subnet service count under the subnet (one key per
    subnet, not per address), a sub-user's too; an IPv4 exit and an IPv6 exit IP of a per-address service
    stay per address."""
    sub = SubuserEntry(1, "sub-1", "a-sub", "pw", countries=frozenset({"us"}))
    v6 = replace(entry({"2001:db8:0:5::/64": "de", "2001:db8:0:6::/64": "us"}), subusers=(sub,))
    v4 = ServiceEntry("svc-b", "rotating", "b", "pw", {"127.0.0.9": "de", "::9": "de"})
    table = AccessTable([v6, v4])
    ctx = Context(table, Router(), ConnectionLimiter(), Meter(), Settings())
    router = Router(rng=random.Random(3))
    drawn = [router.choose(Grant(v6, None), None) for _ in range(50)]
    for address in drawn:
        ctx.error("svc-a", "h", "refused", address)
    ctx.error("svc-a", "h", "timeout", "2001:db8:0:6::7")
    ctx.error("svc-a", "h", "dns", "2001:db8:0:5::8")  # not the exit's fault: no exit error
    ctx.error("svc-b", "h", "refused", "127.0.0.9")
    ctx.error("svc-b", "h", "connect", "::9")
    mid = subusers.metering_id("svc-a", 1)
    ctx.error(mid, "h", "refused", "2001:db8:0:6::1:2")
    exits = {(r.service_id, *k): n for r in ctx.meter.drain() for k, n in r.exit_errors.items()}
    per_subnet = {
        net: sum(subnet_of(ip) == net for ip in drawn) for net in ("2001:db8:0:5::/64", "2001:db8:0:6::/64")
    }
    assert min(per_subnet.values()) > 0  # both subnets drawn from
    assert exits == {
        ("svc-a", "2001:db8:0:5::/64", "refused"): per_subnet["2001:db8:0:5::/64"],
        ("svc-a", "2001:db8:0:6::/64", "refused"): per_subnet["2001:db8:0:6::/64"],
        ("svc-a", "2001:db8:0:6::/64", "timeout"): 1,
        ("svc-b", "127.0.0.9", "refused"): 1,
        ("svc-b", "::9", "connect"): 1,
        (mid, "2001:db8:0:6::/64", "refused"): 1,
    }


async def routed_prefix(platform: Platform, country: str) -> str:
    """A fresh /56 of 2001:db8::/48 (the prefix the namespace routes to lo) as the only proxy_ipv6 stock of
    ``country`` (engineer D's prefix import; other live prefixes of that country are retired)."""
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockPrefix)
            .where(StockPrefix.retired_at.is_(None), StockPrefix.country_maxmind == country)
            .values(retired_at=utcnow())
        )
        while True:
            try:
                row, added = await stock_subnets.add_prefix(
                    uow.session, f"2001:db8:0:{_RUN.randrange(1, 256):x}00::/56", country, country, 64
                )
            except ValueError:  # overlaps one on sale: draw again
                continue
            if added:
                break
        await uow.commit()
    return str(row.prefix)


async def ipv6_service(client: Any, account: Any, country: str, mode: str = "rotating") -> dict[str, Any]:
    """A proxy_ipv6 service (one /64) ordered through the REST API; ``pinned``: pinned to an address of it."""
    key = await account.key()
    await account.credit(10_000)
    order = {
        "product_kind": "proxy_ipv6",
        "period_months": 1,
        "segments": [{"country": country, "count": 1}],
        "geo_source": "maxmind",
        "whitelist_ips": [f"127.0.{_RUN.randrange(100, 250)}.{_RUN.randrange(1, 250)}"],  # not the client
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }
    r = await client.post("/api/v1/billing/composite/order", json=order, headers=bearer(key))
    assert r.status_code == 201, r.text
    svc = r.json()["service"]
    base = f"{API}/{svc['service_id']}"
    auth = (await client.get(f"{base}/proxy/auth?reveal=true", headers=bearer(key))).json()
    out = {
        "service_id": svc["service_id"],
        "login": auth["login"],
        "password": auth["password"],
        "subnet": svc["ips"][0]["ip"],
        "number": svc["service_number"],
        "key": key,
        "pin": None,
    }
    if mode == "pinned":
        out["pin"] = str(ipaddress.IPv6Network(out["subnet"])[0x1234])
        body = {"mode": "pinned", "pin": out["pin"]}
        r = await client.put(f"{base}/proxy/sticky/mode", json=body, headers=bearer(key))
        assert r.status_code == 200, r.text
    return out


async def test_store_loads_subnets_and_follows_the_change_log(client, platform, account) -> None:
    await routed_prefix(platform, "IS")
    svc = await ipv6_service(client, account, "IS")
    first = svc["subnet"]
    async with store_sync(platform) as sync:
        loaded = sync.table.rotating_by_login(svc["login"])
        assert loaded is not None and loaded.kind == "rotating"
        assert isinstance(loaded.exit_ips, SubnetExits) and dict(loaded.exit_ips) == {first: "is"}
        # refresh through the API: a new /64, the old one released; the change log brings it to the node
        r = await client.post(
            f"{API}/{svc['service_id']}/proxy/refresh",
            json={"idempotency_key": "v6"},
            headers=bearer(svc["key"]),
        )
        assert r.status_code == 200, r.text
        second = r.json()["replaced"][0]["new"]
        assert second != first

        async def moved() -> bool:
            await sync.poll()
            now = sync.table.get(svc["service_id"])
            return now is not None and dict(now.exit_ips) == {second: "is"}

        await eventually(moved, within=3.0)


def namespace_skip_reason() -> str | None:
    if sys.platform != "linux":
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "needs root: the test creates a network namespace (unshare -n) and routes 2001:db8::/48 to lo"
    for tool in ("unshare", "ip", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"unshare -n -m is refused here: {probe.stderr.decode().strip()}"
    return None


async def namespace_url(platform: Platform) -> str:
    """The store's URL as seen from a new network namespace: a SQLite file as is; PostgreSQL through its
    Unix socket (127.0.0.1 of the host is not reachable from the namespace)."""
    url = make_url(platform.db.url)
    if url.get_backend_name() != "postgresql":
        return platform.db.url
    async with platform.db.unit_of_work(write=False) as uow:
        dirs = (await uow.session.execute(text("SHOW unix_socket_directories"))).scalar_one()
    socket_dir = str(dirs).split(",")[0].strip()
    return url.set(host=None, query={"host": socket_dir, "port": str(url.port)}).render_as_string(
        hide_password=False
    )


async def test_ipv6_exits_end_to_end_in_a_namespace(client, platform, account, tmp_path) -> None:
    reason = namespace_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    await routed_prefix(platform, "IS")
    a = await ipv6_service(client, account, "IS")
    b = await ipv6_service(client, await make_account(platform), "IS", "pinned")  # another customer
    a_net, b_net, pin = a["subnet"], b["subnet"], b["pin"]
    assert a["login"] != b["login"] and a_net != b_net
    config = {
        "database_url": await namespace_url(platform),
        "secret_key": platform.settings.secret_key,
        "home": str(tmp_path),
        "a": a,
        "b": b,
        "requests": 100,
        "uvloop": True,
    }
    run = subprocess.run(
        ["unshare", "-n", "-m", sys.executable, "-m", "tests.gateway.ipv6_netns", json.dumps(config)],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    passes = [json.loads(line) for line in run.stdout.decode().splitlines() if line.startswith("{")]
    assert [p["engine"] for p in passes] == [True, False]
    for p in passes:
        assert "2001:db8::/48" in p["local_prefixes"]
        assert p["http_status"] == [200]
        # 100 rotating requests: 100 distinct addresses, all of A's /64, none of B's
        assert len(set(p["http"])) == 100 and {subnet_of(ip) for ip in p["http"]} == {a_net}
        assert p["idle_upstreams"] == 0
        for tunnel in ("connect", "socks"):
            assert len(set(p[tunnel])) == 20 and {subnet_of(ip) for ip in p[tunnel]} == {a_net}
        assert len(set(p["sticky"])) == 1 and subnet_of(p["sticky"][0]) == a_net
        assert set(p["pinned"]) == {pin}
        assert not {subnet_of(ip) for ip in p["origin_peers"]} - {a_net, b_net}
        status, body = p["no_aaaa_http"]
        assert status == 502 and "has no IPv6 address (AAAA)" in body
        assert p["no_aaaa_socks"] == 4  # host unreachable
        assert p["ipv4_literal_http"][0] == 502 and "IPv6" in p["ipv4_literal_http"][1]
        assert [a["service_id"], "no_ipv6"] in p["errors"]
        # refused upstreams from random addresses: one exit-error key, A's subnet (not one per address)
        assert p["refused"] == [502, 502, 5] and p["exit_errors"] == [a_net]
    # ... and so in the usage errors operation (both passes flushed at close: 2 x HTTP, CONNECT, SOCKS5)
    now = utcnow()
    window = {
        "start": (now - timedelta(minutes=5)).isoformat(),
        "end": (now + timedelta(minutes=1)).isoformat(),
    }
    r = await client.get(f"{API}/{a['service_id']}/usage/errors", params=window, headers=bearer(a["key"]))
    assert r.status_code == 200, r.text
    assert r.json()["errors_by_exit_ip"] == {a_net: {"refused": 6}}
    r = await client.get(f"/api/networkstatus/errors/{a['number']}", headers=legacy_auth(account))
    assert r.status_code == 200 and r.json() == [a_net], r.text
