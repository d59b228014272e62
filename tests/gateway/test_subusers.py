"""Sub-users in the gateway (issue 18.2), end to end on loopback: a rotating service bought through the REST
API, its sub-users written to the store, served by a real gateway node over the test database on both
tunnel paths (the Python protocol classes and the C engine): HTTP, CONNECT and SOCKS5 as a sub-user, a
whitelisted client IP as a sub-user, refusals with their reasons (traffic limit, disabled, country,
connection limit) while the service and the other sub-users keep working, and the usage rows."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import UsageError, UsageMinute
from proxyplane.storage.models.subusers import (
    ServiceSubuser,
    SubuserUsageError,
    SubuserUsageMinute,
)
from tests.domains.stock.support import fresh_stock, unique_loopback
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

from .clients import basic, connect_tunnel, http_get, socks_connect
from .conftest import BACKENDS
from .test_store_static import API, eventually, node_settings, running_node

pytestmark = pytest.mark.anyio


@pytest.fixture(params=BACKENDS, ids=lambda b: "engine" if b[1] else "python")
def anyio_backend(request: Any) -> Any:
    return request.param  # conftest.tunnel_path: uvloop -> the C tunnel engine, asyncio -> Python


async def add_subusers(
    client: httpx.AsyncClient, key: str, service_id: str, specs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """{name: (pk, login, password)} of sub-users created through the REST API (the in-process app)."""
    out = {}
    h = bearer(key)
    for name, spec in specs.items():
        whitelist = spec.pop("whitelist", [])
        r = await client.post(f"{API}/{service_id}/subusers", json=spec, headers=h)
        assert r.status_code == 201, r.text
        made = r.json()
        for ip in whitelist:
            w = await client.post(
                f"{API}/{service_id}/subusers/{made['subuser_id']}/whitelist", json={"ip": ip}, headers=h
            )
            assert w.status_code in (200, 201), w.text
        out[name] = (made["subuser_id"], made["login"], made["password"])
    return out


async def pks_of(platform: Platform, subuser_ids: list[str]) -> list[int]:
    async with platform.db.unit_of_work(write=False) as uow:
        rows = await uow.session.execute(
            select(ServiceSubuser.subuser_id, ServiceSubuser.id).where(
                ServiceSubuser.subuser_id.in_([uuid.UUID(s) for s in subuser_ids])
            )
        )
        found = {str(public): pk for public, pk in rows.all()}
    return [found[s] for s in subuser_ids]


async def sums(platform: Platform, service_id: str, pks: list[int]) -> dict[str, Any]:
    async with platform.db.unit_of_work(write=False) as uow:
        s = uow.session
        svc = (
            await s.execute(
                select(
                    func.sum(UsageMinute.requests), func.sum(UsageMinute.bytes_up + UsageMinute.bytes_down)
                ).where(UsageMinute.service_id == uuid.UUID(service_id))
            )
        ).one()
        per_sub = dict(
            (
                await s.execute(
                    select(SubuserUsageMinute.subuser_pk, func.sum(SubuserUsageMinute.requests))
                    .where(SubuserUsageMinute.subuser_pk.in_(pks))
                    .group_by(SubuserUsageMinute.subuser_pk)
                )
            ).all()
        )
        sub_bytes = (
            await s.execute(
                select(func.sum(SubuserUsageMinute.bytes_up + SubuserUsageMinute.bytes_down)).where(
                    SubuserUsageMinute.subuser_pk.in_(pks)
                )
            )
        ).scalar()
        sub_errors = dict(
            (
                await s.execute(
                    select(SubuserUsageError.subuser_pk, func.sum(SubuserUsageError.count))
                    .where(
                        SubuserUsageError.subuser_pk.in_(pks), SubuserUsageError.category.like("subuser_%")
                    )
                    .group_by(SubuserUsageError.subuser_pk)
                )
            ).all()
        )
        svc_errors = dict(
            (
                await s.execute(
                    select(UsageError.category, func.sum(UsageError.count))
                    .where(UsageError.service_id == uuid.UUID(service_id))
                    .group_by(UsageError.category)
                )
            ).all()
        )
        reached = dict(
            (
                await s.execute(
                    select(ServiceSubuser.id, ServiceSubuser.limit_reached).where(ServiceSubuser.id.in_(pks))
                )
            ).all()
        )
    return {
        "svc_requests": int(svc[0] or 0),
        "svc_bytes": int(svc[1] or 0),
        "sub_requests": {pk: int(n) for pk, n in per_sub.items()},
        "sub_bytes": int(sub_bytes or 0),
        "sub_errors": {pk: int(n) for pk, n in sub_errors.items()},
        "svc_errors": {c: int(n) for c, n in svc_errors.items()},
        "reached": reached,
    }


async def test_subusers_through_a_node(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 2)
    await fresh_stock(platform, "proxy_datacenter", "DE", 2)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    key, sid = await account.key(), str(svc.service_id)
    auth = {"login": svc.login, "password": "service-password"}  # tests/domains/subusers/support.py
    # a client address no other service whitelists: a live rotating service of an earlier test that
    # whitelists it (the REST IPv6 orders whitelist 127.0.0.9) owns it before any sub-user (decisions:
    # Gateway 4; authenticate() reads the sub-users' whitelists only on a miss)
    whitelisted = unique_loopback()
    subs = await add_subusers(
        client,
        key,
        sid,
        {
            "a": {"max_connections": 1, "whitelist": [whitelisted]},
            "b": {"traffic_limit_requests": 2},
            "c": {"countries": ["US"]},
        },
    )
    url = f"http://127.0.0.1:{origin.port}/x"
    target = f"127.0.0.1:{origin.port}"

    async with running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as node:
        http = ("127.0.0.1", node.gateway.gateway_port("http"))
        socks = ("127.0.0.1", node.gateway.gateway_port("socks"))

        async def get(name: str, suffix: str = "", source: str | None = None) -> tuple[int, bytes]:
            login = auth["login"] if name == "service" else subs[name][1]
            password = auth["password"] if name == "service" else subs[name][2]
            status, _, body = await http_get(
                http, url, None if source else basic(login + suffix, password), source=source
            )
            return status, body

        own = 0  # requests of the service's own login
        assert (await get("service"))[0] == 200
        own += 1
        assert [(await get("a"))[0], (await get("b"))[0], (await get("b"))[0]] == [200, 200, 200]
        # b has used its 2 requests: refused by this node before any flush, the others keep working
        status, body = await get("b")
        assert status == 407 and b"traffic limit" in body
        assert (await get("a"))[0] == (await get("service"))[0] == 200
        own += 1
        # a client IP whitelisted for a sub-user fetches as that sub-user
        assert (await get("a", source=whitelisted))[0] == 200
        # countries: c may only use US exits
        status, body = await get("c", "-country-de")
        assert status == 407 and b"country not allowed" in body
        exits = node.gateway.ctx.access.get(sid).exit_ips  # type: ignore[union-attr]
        seen = set()
        for _ in range(4):
            status, body = await get("c")
            assert status == 200, body
            seen.add(body.split()[0].decode())
        assert seen and {exits[ip] for ip in seen} == {"us"}
        # SOCKS5 and CONNECT as a sub-user; a's connection limit (1) holds while its tunnel is open
        a_login, a_pw = subs["a"][1], subs["a"][2]
        rep, _, _, tunnel = await socks_connect(socks, "127.0.0.1", origin.port, a_login, a_pw)
        assert rep == 0
        status, _, w = await connect_tunnel(http, target, basic(a_login, a_pw))
        w.close()
        assert status == 429
        rep2, _, _, w2 = await socks_connect(socks, "127.0.0.1", origin.port, a_login, a_pw)
        w2.close()
        assert rep2 == 2  # connection not allowed by ruleset
        assert (await get("c"))[0] == 200  # the service's other sub-users are not limited by a's
        tunnel.close()

        async def a_connects() -> bool:
            status, _, w = await connect_tunnel(http, target, basic(a_login, a_pw))
            w.close()
            return status == 200

        await eventually(a_connects)
        rep, _, _, w = await socks_connect(socks, "127.0.0.1", origin.port, subs["b"][1], subs["b"][2])
        w.close()
        assert rep == "auth-failed"  # b over its traffic limit: the SOCKS5 authentication fails
        # disabling c through the API reaches the node through the change log
        r = await client.patch(
            f"{API}/{sid}/subusers/{subs['c'][0]}", json={"enabled": False}, headers=bearer(key)
        )
        assert r.status_code == 200, r.text

        async def c_refused() -> bool:
            status, body = await get("c")
            return status == 407 and b"disabled" in body

        await eventually(c_refused)
        assert (await get("service"))[0] == 200
        own += 1
        await asyncio.sleep(0)
        await node.flush_usage()

    pks = await pks_of(platform, [public for public, _, _ in subs.values()])
    got = await sums(platform, sid, pks)
    a_pk, b_pk, c_pk = pks
    assert got["sub_requests"][b_pk] == 2 and got["reached"][b_pk] is True
    assert got["sub_requests"][a_pk] >= 4 and got["sub_requests"][c_pk] >= 5
    # the service's usage is its own login's plus its sub-users'
    assert got["svc_requests"] == own + sum(got["sub_requests"].values())
    assert 0 < got["sub_bytes"] <= got["svc_bytes"]
    # refusals counted per sub-user and for the service
    assert got["sub_errors"][b_pk] == 2 and got["sub_errors"][c_pk] >= 2
    assert got["svc_errors"]["subuser_traffic_limit"] == 2 and got["svc_errors"]["limit"] == 2


@pytest.mark.parametrize("anyio_backend", BACKENDS[-1:], ids=["engine"])  # the production path only
async def test_two_nodes_see_a_change_within_a_second_and_share_the_connection_limit(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 1)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    key, sid = await account.key(), str(svc.service_id)
    subs = await add_subusers(client, key, sid, {"d": {"max_connections": 1}})
    public, login, password = subs["d"]
    target = f"127.0.0.1:{origin.port}"

    async with (
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as a,
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as b,
    ):
        gw_a = ("127.0.0.1", a.gateway.gateway_port("http"))
        socks_b = ("127.0.0.1", b.gateway.gateway_port("socks"))
        # a tunnel open on node B holds the sub-user's one connection: node A refuses once it knows
        rep, _, _, tunnel = await socks_connect(socks_b, "127.0.0.1", origin.port, login, password)
        assert rep == 0

        async def refused_on_a() -> bool:
            status, _, w = await connect_tunnel(gw_a, target, basic(login, password))
            w.close()
            return status == 429

        await eventually(refused_on_a, within=3.0)  # node_limits syncs every second
        tunnel.close()

        async def admitted_on_a() -> bool:
            status, _, w = await connect_tunnel(gw_a, target, basic(login, password))
            w.close()
            return status == 200

        await eventually(admitted_on_a, within=3.0)
        # disabled through the API: both nodes refuse within a second
        r = await client.patch(f"{API}/{sid}/subusers/{public}", json={"enabled": False}, headers=bearer(key))
        assert r.status_code == 200, r.text

        async def both_refuse() -> bool:
            for gw in (gw_a, ("127.0.0.1", b.gateway.gateway_port("http"))):
                status, _, body = await http_get(gw, f"http://{target}/x", basic(login, password))
                if status != 407 or b"disabled" not in body:
                    return False
            return True

        await eventually(both_refuse, within=1.0)
