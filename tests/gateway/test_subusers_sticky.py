"""A sub-user's sticky sessions across gateway nodes (issue 18), end to end on loopback: two nodes on one
store, a rotating service with a sub-user created through the REST API. A session the sub-user makes on
node A keeps its exit IP on node B, the API lists it with its subuser_id (apart from the service's own
session of the same sid), deleting it through the API ends it on both nodes and leaves the service's, a
rotation through the sub-user's path moves it on both, the sub-user's purge ends its sessions only and the
service's purge ends the service's and its sub-users' sessions everywhere."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from proxyplane.gateway.node import GatewayNode
from proxyplane.platform import Platform
from tests.domains.stock.support import fresh_stock
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

from .clients import basic, http_get
from .test_store_static import API, eventually, node_settings, running_node
from .test_subusers import add_subusers, pks_of

pytestmark = pytest.mark.anyio
# seconds a change may take to reach both nodes (a bound, not a delay: each wait ends as soon as it holds):
# the API's write, then each node's next poll of the store (every 0.25 s), seconds on a loaded 2-core box
ACROSS = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def holds(node: GatewayNode, owner: str, sid: str) -> bool:
    return any(s.sid == sid for s in node.router.list_sessions(owner))


async def test_subuser_sticky_sessions_across_nodes(
    client: httpx.AsyncClient, platform: Platform, account: Account, origin, tmp_path
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "US", 4)
    svc = await make_service(platform, account, parameters={"exit_pool": "proxy_datacenter"})
    key, sid = await account.key(), str(svc.service_id)
    subs = await add_subusers(client, key, sid, {"s": {}})
    public, login, password = subs["s"]
    [pk] = await pks_of(platform, [public])
    mine = f"{sid}/{pk}"  # the sub-user's sessions in a node's router
    sessions = f"{API}/{sid}/proxy/sticky/sessions"
    url = f"http://127.0.0.1:{origin.port}/x"

    async with (
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as a,
        running_node(platform, node_settings(["127.0.0.1"]), tmp_path) as b,
    ):
        gw_a = ("127.0.0.1", a.gateway.gateway_port("http"))
        gw_b = ("127.0.0.1", b.gateway.gateway_port("http"))

        async def exit_ip(gw: Any, username: str, pw: str = password) -> str:
            status, _, body = await http_get(gw, url, basic(username, pw))
            assert status == 200, body
            return body.split()[0].decode()

        async def listed(**params: str) -> list[tuple[str, str, str]]:
            """(sid, exit IP, subuser_id or "" for the service's own login) of the listed sessions."""
            r = await client.get(sessions, params=params, headers=bearer(key))
            assert r.status_code == 200, r.text
            return sorted((s["sid"], s["exit_ip"], s["subuser_id"] or "") for s in r.json()["sessions"])

        first = await exit_ip(gw_a, f"{login}-session-abc")
        assert {await exit_ip(gw_a, f"{login}-session-abc") for _ in range(3)} == {first}
        own = await exit_ip(gw_a, f"{svc.login}-session-abc", "service-password")  # same sid, other login
        want = sorted([("abc", first, public), ("abc", own, "")])

        async def both_listed() -> bool:
            return await listed() == want

        await eventually(both_listed, within=ACROSS)
        assert await listed(subuser_id=public) == [("abc", first, public)]
        other = await client.get(sessions, params={"subuser_id": str(uuid.uuid4())}, headers=bearer(key))
        assert other.status_code == 404

        # node B learns the sub-user's session from the store: the same exit IP there
        async def same_on_b() -> bool:
            return await exit_ip(gw_b, f"{login}-session-abc") == first

        await eventually(same_on_b, within=ACROSS)
        assert holds(b, mine, "abc")

        # deleting it through the API (with its subuser_id) ends it on both nodes; the service's stays
        r = await client.delete(f"{sessions}/abc", params={"subuser_id": public}, headers=bearer(key))
        assert r.status_code == 204, r.text
        again = await client.delete(f"{sessions}/abc", params={"subuser_id": public}, headers=bearer(key))
        assert again.status_code == 404

        async def ended_everywhere() -> bool:
            return not holds(a, mine, "abc") and not holds(b, mine, "abc")

        await eventually(ended_everywhere, within=ACROSS)
        assert holds(a, sid, "abc") and await listed() == [("abc", own, "")]

        # a sub-user's session rotated through its own path: the new exit IP on both nodes
        before = await exit_ip(gw_b, f"{login}-session-xyz")
        sub_sticky = f"{API}/{sid}/subusers/{public}/sticky"

        async def xyz_everywhere() -> bool:  # listed, and node A holds it (a request there would not race)
            return ("xyz", before, public) in await listed() and holds(a, mine, "xyz")

        await eventually(xyz_everywhere, within=ACROSS)
        r = await client.post(f"{sub_sticky}/sessions/xyz/rotate", headers=bearer(key))
        assert r.status_code == 200, r.text
        assert r.json()["subuser_id"] == public and r.json()["exit_ip"] != before
        new = r.json()["exit_ip"]

        async def rotated_everywhere() -> bool:
            return {await exit_ip(gw, f"{login}-session-xyz") for gw in (gw_a, gw_b)} == {new}

        await eventually(rotated_everywhere, within=ACROSS)
        # the sub-user's purge ends its sessions only
        r = await client.post(f"{sub_sticky}/purge", headers=bearer(key))
        assert r.status_code == 200 and r.json()["purged"] == 1

        async def xyz_ended() -> bool:
            return not holds(a, mine, "xyz") and not holds(b, mine, "xyz")

        await eventually(xyz_ended, within=ACROSS)
        assert holds(a, sid, "abc") and await listed() == [("abc", own, "")]

        # the service's purge ends its own sessions and its sub-users' on every node
        await exit_ip(gw_b, f"{login}-session-q")

        async def two_listed() -> bool:
            return len(await listed()) == 2

        await eventually(two_listed, within=ACROSS)
        r = await client.post(f"{API}/{sid}/proxy/sticky/purge", headers=bearer(key))
        assert r.status_code == 200 and r.json()["purged"] == 2

        async def purged_everywhere() -> bool:
            return not any(holds(n, o, s) for n in (a, b) for o, s in ((mine, "q"), (sid, "abc")))

        await eventually(purged_everywhere, within=ACROSS)
        assert await listed() == []
