"""Upstream pools on the operator side (issue 36.4): registration through the operator API (a template
naming an unknown field refused with the field named, at registration and on a change; the password never
in any answer or audit row), health checks against real suppliers on loopback (pproxy) and a closed
port, and the margin report's revenue (the ledger's sales of services drawing from the pool) vs cost
(bytes relayed x per-GB cost)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import delete, select

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.upstreams.service import cost_cents
from proxyplane.platform import Platform
from proxyplane.storage.models.operators import OperatorAudit
from proxyplane.storage.models.upstreams import Upstream
from proxyplane.storage.repos import upstreams as repo
from tests.domains.operators.helpers import make_operator, run
from tests.domains.upstreams.suppliers import free_tcp_port, pproxy
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/admin/v1"


def pool_name() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


async def drop_pool(platform: Platform, pool: str) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
        await uow.commit()


async def test_register_refuses_unknown_field_and_never_shows_the_password(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    pool = pool_name()
    _, _, key = await make_operator(platform, "admin")
    body = {"pool": pool, "scheme": "http", "host": "127.0.0.1", "port": 3128, "username": "acct",
            "password": "s3cret-supplier-pw", "cost_per_gb_cents": 250}
    bad = await client.post(f"{API}/upstream_add", headers=bearer(key),
                            json={**body, "template": "{user}[-zip-{zip}]"})
    assert bad.status_code == 422, bad.text
    detail = bad.json()["detail"]
    assert detail["field"] == "template" and detail["template_field"] == "zip"
    assert "{zip}" in detail["message"]
    outside = await client.post(f"{API}/upstream_add", headers=bearer(key),
                                json={**body, "template": "{user}-country-{country}"})
    assert outside.status_code == 422 and outside.json()["detail"]["template_field"] == "country"
    good = await client.post(f"{API}/upstream_add", headers=bearer(key),
                             json={**body, "template": "{user}[-country-{country}][-session-{session}]"})
    assert good.status_code == 200, good.text
    made = good.json()
    assert made["position"] == 1 and made["has_password"] is True and made["health"] == "unknown"
    second = (await client.post(f"{API}/upstream_add", headers=bearer(key), json=body)).json()
    assert second["position"] == 2
    listed = await client.get(f"{API}/upstream_list", params={"pool": pool}, headers=bearer(key))
    assert [u["upstream_id"] for u in listed.json()] == [made["upstream_id"], second["upstream_id"]]
    taken = await client.post(f"{API}/upstream_set", headers=bearer(key),
                              json={"upstream_id": second["upstream_id"], "position": 1})
    assert taken.status_code == 409
    changed = await client.post(f"{API}/upstream_set", headers=bearer(key),  # a change is checked too
                                json={"upstream_id": made["upstream_id"], "template": "{user}-city-{town}"})
    assert changed.status_code == 422 and changed.json()["detail"]["template_field"] == "town", changed.text
    kept = await client.get(f"{API}/upstream_list", params={"pool": pool}, headers=bearer(key))
    assert kept.json()[0]["template"] == "{user}[-country-{country}][-session-{session}]"
    for text in (good.text, listed.text):
        assert "s3cret-supplier-pw" not in text
    async with platform.db.unit_of_work(write=False) as uow:
        rows = (await uow.session.execute(
            select(OperatorAudit).where(OperatorAudit.action == "operator_upstream_add"))).scalars().all()
        stored = await uow.session.get(Upstream, uuid.UUID(made["upstream_id"]))
    assert rows and not any("s3cret-supplier-pw" in repr(r.__dict__) for r in rows)
    assert stored is not None and "s3cret" not in stored.password_enc
    assert platform.secrets.decrypt(stored.password_enc) == "s3cret-supplier-pw"
    viewer = (await make_operator(platform, "viewer"))[2]
    assert (await client.post(f"{API}/upstream_add", headers=bearer(viewer), json=body)).status_code == 403
    await drop_pool(platform, pool)


async def test_health_check_up_through_real_suppliers_and_down_on_a_closed_port(platform: Platform) -> None:
    pool = pool_name()
    reached: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(writer.get_extra_info("peername")[0])
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    target_server = await asyncio.start_server(accept, "127.0.0.1", 0)
    target = f"127.0.0.1:{target_server.sockets[0].getsockname()[1]}"
    async with pproxy("http") as http_port, pproxy("socks5") as socks_port:
        common = {"pool": pool, "username": "sup", "password": "sup-pw", "check_target": target}
        await run(platform, "operator_upstream_add", scheme="http", host="127.0.0.1", port=http_port,
                  **common)
        await run(platform, "operator_upstream_add", scheme="socks5", host="127.0.0.1", port=socks_port,
                  **common)
        dead = free_tcp_port()
        await run(platform, "operator_upstream_add", scheme="http", host="127.0.0.1", port=dead, **common)
        checked = await run(platform, "operator_upstream_check", pool=pool)
    target_server.close()
    assert len(reached) == 2  # each live supplier opened its tunnel to the check target
    assert [c["health"] for c in checked] == ["up", "up", "down"]
    assert checked[0]["check_ms"] is not None and checked[2]["check_error"].startswith("refused")
    listed = await run(platform, "operator_upstream_list", pool=pool)
    assert [u["health"] for u in listed] == ["up", "up", "down"] and listed[0]["checked_at"]
    await drop_pool(platform, pool)


async def test_margin_is_sales_of_the_pools_services_minus_bytes_times_cost(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pool = pool_name()
    cheap = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=1,
                      cost_per_gb_cents=300, name="cheap")
    dear = await run(platform, "operator_upstream_add", pool=pool, scheme="socks5", host="127.0.0.1", port=2,
                     cost_per_gb_cents=450, name="dear")
    product = await run(platform, "operator_product_add", name=f"Resold {pool}", kind="proxy_rotating",
                        price_cents=1_200, config={"plan": "bandwidth", "quota_bytes": 5_000_000_000,
                                                   "upstream_pool": pool})
    key = await account.key()
    await account.credit(5_000)
    bought = await client.post("/api/v1/customer/services", headers=bearer(key),
                               json={"product_id": product["product_id"]})
    assert bought.status_code == 201, bought.text
    service_id = bought.json()["service"]["service_id"]
    config = await client.get(f"/api/v1/customer/services/{service_id}/proxy/config", headers=bearer(key))
    assert config.status_code == 200 and config.json()["countries"] == []  # the supplier's, not our stock
    hour = utcnow().replace(minute=0, second=0, microsecond=0)
    async with platform.db.unit_of_work() as uow:  # what gateway nodes flush (gateway/upstream_pools.py)
        await repo.add_usage(uow.session, [
            (uuid.UUID(cheap["upstream_id"]), hour, 400_000_000, 1_100_000_000, 7, 1),
            (uuid.UUID(dear["upstream_id"]), hour - timedelta(hours=1), 1, 999_999_999, 2, 0),
            (uuid.UUID(dear["upstream_id"]), hour - timedelta(days=40), 5 * 10**9, 0, 1, 0),  # too old
        ])
        await repo.add_usage(uow.session, [(uuid.UUID(cheap["upstream_id"]), hour, 0, 500_000_000, 1, 0)])
        await uow.commit()
    report = await run(platform, "operator_upstream_margin", days=30, pool=pool)
    [entry] = report["pools"]
    by_name = {u["name"]: u for u in entry["upstreams"]}
    assert by_name["cheap"]["bytes"] == 2_000_000_000 and by_name["cheap"]["tunnels"] == 8
    assert by_name["cheap"]["cost_cents"] == 600 and by_name["dear"]["cost_cents"] == 450
    assert entry["cost_cents"] == 1_050 and entry["services"] == 1
    assert entry["revenue_cents"] == 1_200 and entry["margin_cents"] == 150
    assert cost_cents(1, 450) == 1  # a started cent is a cent: the cost is never under-reported
    await run(platform, "operator_product_set", product_id=product["product_id"], active=False)
    await drop_pool(platform, pool)


async def test_a_product_names_only_a_pool_with_a_supplier(platform: Platform) -> None:
    pool = pool_name()
    with pytest.raises(ValidationFailed) as err:
        await run(platform, "operator_product_add", name=f"Empty {pool}", kind="proxy_rotating",
                  price_cents=1, config={"upstream_pool": pool})
    assert err.value.extra["field"] == "upstream_pool"
    local = await run(platform, "operator_product_add", name=f"Local {pool}", kind="proxy_rotating",
                      price_cents=1, config={"exit_pool": "proxy_datacenter"})
    with pytest.raises(ValidationFailed):
        await run(platform, "operator_product_set", product_id=local["product_id"], upstream_pool=pool)
    await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=1)
    moved = await run(platform, "operator_product_set", product_id=local["product_id"], upstream_pool=pool)
    assert moved["config"] == {"exit_pool": "proxy_datacenter", "upstream_pool": pool}
    back = await run(platform, "operator_product_set", product_id=local["product_id"], upstream_pool="")
    assert back["config"] == {"exit_pool": "proxy_datacenter"}
    await run(platform, "operator_product_set", product_id=local["product_id"], active=False)
    await drop_pool(platform, pool)
