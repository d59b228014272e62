"""IPv6 services on the legacy API (issue 16): iplist lists the subnets (static types) or the rotating
endpoint (ppr types); networkstatus/inactive lists subnets of a retired prefix or outside every live
node's local prefixes. Concurrent orders on a small prefix never share a subnet."""

from __future__ import annotations

import asyncio
import ipaddress
import uuid

import httpx
import pytest
from sqlalchemy import delete, select, update

from proxyplane.core.clock import utcnow
from proxyplane.core.rotating_gateway import rotating_gateway
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway_nodes import GatewayNodeAddresses
from proxyplane.storage.models.prefixes import StockPrefix
from tests.adapters.legacy.support import auth
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
ORDER = "/api/v1/billing/composite/order"


def order(country: str, count: int) -> dict[str, object]:
    return {
        "product_kind": "proxy_ipv6",
        "period_months": 1,
        "segments": [{"country": country, "count": count}],
        "geo_source": "maxmind",
        "whitelist_ips": ["127.0.0.9"],
        "use_balance": True,
        "idempotency_key": uuid.uuid4().hex,
    }


async def test_iplist_and_networkstatus(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    prefix = await fresh_prefix(platform, "SK", length=56)
    key = await account.key()
    await account.credit(10_000)
    r = await client.post(ORDER, json=order("SK", 2), headers=bearer(key))
    assert r.status_code == 201, r.text
    number = r.json()["order_id"]
    held = [i["ip"] for i in r.json()["service"]["ips"]]
    login = r.json()["service"]["login"]

    r = await client.get(f"/api/iplist/http-ip/txt/{number}", headers=auth(account))
    assert (r.status_code, r.text) == (200, "".join(s + "\r\n" for s in held))
    r = await client.get(f"/api/iplist/http-auth/csv/{number}", headers=auth(account))
    assert r.text == "".join(s + "\r\n" for s in held)
    r = await client.get(f"/api/iplist/ppr-http/txt/{number}", headers=auth(account))
    gw = rotating_gateway()
    assert (
        r.status_code == 200
        and r.text.startswith(f"{login}:")
        and r.text.endswith(f"@{gw.host}:{gw.http_port}\r\n")
    )

    inactive = f"/api/networkstatus/inactive/{number}"
    node = f"test-v6-{uuid.uuid4().hex[:8]}"
    async with platform.db.unit_of_work() as uow:  # a live node that serves the first subnet only
        uow.session.add(
            GatewayNodeAddresses(node_id=node, prefixes=["127.0.0.0/8", held[0]], updated_at=utcnow())
        )
        await uow.commit()
    try:
        r = await client.get(inactive, headers=auth(account))
        assert (r.status_code, r.json()) == (200, [held[1]])
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(GatewayNodeAddresses)
                .where(GatewayNodeAddresses.node_id == node)
                .values(prefixes=[prefix])
            )
            await uow.commit()
        assert (await client.get(inactive, headers=auth(account))).json() == []
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                update(StockPrefix).where(StockPrefix.prefix == prefix).values(retired_at=utcnow())
            )
            await uow.commit()
        assert (await client.get(inactive, headers=auth(account))).json() == held  # a retired prefix
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(
                delete(GatewayNodeAddresses).where(GatewayNodeAddresses.node_id == node)
            )
            await uow.commit()
        await retire_country(platform, "SK")


async def test_concurrent_orders_never_share_a_subnet(
    client: httpx.AsyncClient, platform: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("proxyplane.domains.accounts.service.hash_password", lambda password: "unused")
    prefix = await fresh_prefix(platform, "HU", length=61)  # 8 /64s: 4 orders of 2 fit, 2 do not
    keys = []
    for _ in range(6):
        buyer = await make_account(platform)
        await buyer.credit(10_000)
        keys.append(await buyer.key())
    async with platform.db.unit_of_work(write=False) as uow:  # prefixes other tests left on sale
        others = set(
            (
                await uow.session.scalars(
                    select(StockPrefix.country_maxmind).where(
                        StockPrefix.retired_at.is_(None), StockPrefix.country_maxmind != "HU"
                    )
                )
            ).all()
        )
    plan = await client.post(
        "/api/v1/billing/composite/auto-plan",
        json={"total_ips": 8, "product_kind": "proxy_ipv6", "excluded_countries": sorted(others)},
    )
    assert plan.status_code == 200 and {"country": "HU", "count": 8} in plan.json()["segments"], plan.text
    results = await asyncio.gather(
        *(client.post(ORDER, json=order("HU", 2), headers=bearer(k)) for k in keys)
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [201, 201, 201, 201, 422, 422], [r.text for r in results]
    got = [i["ip"] for r in results if r.status_code == 201 for i in r.json()["service"]["ips"]]
    assert sorted(got) == sorted(str(s) for s in ipaddress.IPv6Network(prefix).subnets(new_prefix=64))
