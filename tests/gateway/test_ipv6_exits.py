"""IPv6 exits from a service's subnets (issue 16.3): the router's draws, the store loading subnets and
following the change log, and end to end in a network namespace (tests/gateway/ipv6_netns.py): 100
rotating requests from 100 distinct addresses of the service's /64 and none from another customer's,
sticky, pinned, HTTP / CONNECT / SOCKS5 on both tunnel paths, a destination without AAAA.

The services are bought through the REST API as rotating services and then turned into ``proxy_ipv6``
ones with rows (product kind, a stock prefix, a live service_subnets row, proxy settings): the rows
engineer D's allocation writes (storage/models/prefixes.py)."""

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
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, text, update
from sqlalchemy.engine import make_url

from proxyplane.gateway.access import Grant, ServiceEntry
from proxyplane.gateway.protocol.username import UsernameOptions
from proxyplane.gateway.routing import Router, RoutingError
from proxyplane.gateway.subnets import SubnetExits
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway import ProxySettings
from proxyplane.storage.models.prefixes import ServiceSubnet, StockPrefix
from tests.support import bearer, make_account

from .test_store_changes import store_sync
from .test_store_static import API, buy, eventually

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


async def ipv6_service(
    client: Any, platform: Platform, account: Any, subnet: str, mode: str = "rotating", pin: str | None = None
) -> dict[str, Any]:
    """A service bought through the API, turned into a proxy_ipv6 one holding ``subnet``."""
    svc = await buy(client, platform, account, "Rotating datacenter", parameters={})
    auth = (
        await client.get(f"{API}/{svc['service_id']}/proxy/auth?reveal=true", headers=bearer(svc["key"]))
    ).json()
    sid = uuid.UUID(svc["service_id"])
    net = ipaddress.IPv6Network(subnet)
    async with platform.db.unit_of_work() as uow:
        s = uow.session
        await s.execute(update(Service).where(Service.service_id == sid).values(product_kind="proxy_ipv6"))
        prefix = StockPrefix(
            prefix=str(net.supernet(new_prefix=56)), subnet_len=64, country_maxmind="DE", country_ripe="DE"
        )
        s.add(prefix)
        await s.flush()
        s.add(ServiceSubnet(service_id=sid, prefix_id=prefix.id, subnet=subnet, country="DE"))
        await s.execute(delete(ProxySettings).where(ProxySettings.service_id == sid))
        s.add(ProxySettings(service_id=sid, session_mode=mode, pin=pin, sticky_ttl_seconds=600))
        await uow.commit()
    return {"service_id": str(sid), "login": auth["login"], "password": auth["password"], "prefix": prefix.id}


def fresh_subnets(n: int) -> list[str]:
    """Distinct /64s of 2001:db8::/48 (each in a /56 of its own: the prefix rows are unique)."""
    return [f"2001:db8:0:{block:x}00::/64" for block in _RUN.sample(range(1, 256), n)]


async def test_store_loads_subnets_and_follows_the_change_log(client, platform, account) -> None:
    first, second = fresh_subnets(2)
    svc = await ipv6_service(client, platform, account, first)
    async with store_sync(platform) as sync:
        loaded = sync.table.rotating_by_login(svc["login"])
        assert loaded is not None and loaded.kind == "rotating"
        assert isinstance(loaded.exit_ips, SubnetExits) and dict(loaded.exit_ips) == {first: "de"}
        # a refresh-like change: the subnet released, another allocated; the change log brings it
        sid = uuid.UUID(svc["service_id"])
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(ServiceSubnet)
                .where(ServiceSubnet.service_id == sid)
                .values(released_at=ServiceSubnet.allocated_at)
            )
            uow.session.add(
                ServiceSubnet(service_id=sid, prefix_id=svc["prefix"], subnet=second, country="US")
            )
            await uow.commit()

        async def moved() -> bool:
            await sync.poll()
            now = sync.table.get(svc["service_id"])
            return now is not None and dict(now.exit_ips) == {second: "us"}

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
    a_net, b_net = fresh_subnets(2)
    pin = str(ipaddress.IPv6Network(b_net)[0x1234])
    a = await ipv6_service(client, platform, account, a_net)
    other = await make_account(platform)  # another customer
    b = await ipv6_service(client, platform, other, b_net, "pinned", pin)
    assert a["login"] != b["login"]
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
