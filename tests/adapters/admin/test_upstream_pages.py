"""The console's upstream pools and margin pages (issue 36.4) through the real app: an admin registers a
supplier (pproxy on loopback) from the form (sent twice: one supplier), checks it (up, through it to a
loopback target), disables and enables it, all audited with the password redacted and never on a page; a
template naming an unknown field is refused with nothing stored; the margin page shows the pool's revenue
(the service bought) and cost (bytes x price, rounded up) as computed here; a viewer sees no form and is
refused (403 naming stock.write), support cannot read the margin, finance cannot read the suppliers."""

from __future__ import annotations

import asyncio
import re
import uuid

import httpx
import pytest
from sqlalchemy import delete

from proxyplane.adapters.admin.base import money
from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models.upstreams import Upstream
from proxyplane.storage.repos import upstreams as repo
from tests.adapters.admin.test_catalog_pages import token
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import run
from tests.domains.upstreams.suppliers import pproxy
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
SECRET = "supplier-pw-never-shown"


async def drop_pool(platform: Platform, pool: str) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Upstream).where(Upstream.pool == pool))
        await uow.commit()


def add_form(html: str, pool: str, port: int, target: str, template: str = "{user}") -> dict[str, str]:
    return {"csrf": csrf(html), "form_token": token(html, "/admin/upstreams"), "pool": pool, "name": "first",
            "scheme": "http", "host": "127.0.0.1", "port": str(port), "position": "", "username": "sup",
            "password": SECRET, "cost_per_gb": "2.50", "template": template, "check_target": target}


async def test_register_check_disable_a_supplier_from_the_console(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    pool = f"c{uuid.uuid4().hex[:10]}"
    email, _ = await sign_in(client, platform, "admin")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    target_server = await asyncio.start_server(answer, "127.0.0.1", 0)
    target = f"127.0.0.1:{target_server.sockets[0].getsockname()[1]}"
    try:
        async with pproxy("http", "sup", SECRET) as port:
            page = await client.get("/admin/upstreams")
            assert page.status_code == 200 and 'id="upstream-add"' in page.text
            bad = add_form(page.text, pool, port, target, template="{user}-zip-{zip}")
            refused = await client.post("/admin/upstreams", data=bad)
            assert refused.status_code == 422 and "zip" in refused.text
            form = add_form(page.text, pool, port, target)
            assert (await client.post("/admin/upstreams", data=form)).status_code == 303
            assert (await client.post("/admin/upstreams", data=form)).status_code == 409  # acts once
            [made] = await run(platform, "operator_upstream_list", pool=pool)
            assert made["cost_per_gb_cents"] == 250 and made["health"] == "unknown" and made["has_password"]
            uid = made["upstream_id"]
            page = await client.get("/admin/upstreams")
            assert f'id="pool-{pool}"' in page.text and SECRET not in page.text
            one = {"csrf": csrf(page.text), "upstream_id": uid}
            checked = await client.post("/admin/upstreams/check", data=one)
            assert checked.status_code == 303 and "1+up" in checked.headers["location"]
        page = await client.get("/admin/upstreams")
        item = re.search(rf'id="upstream-{uid}">(.*?)</li>', page.text, re.S)
        assert item and ">up</span>" in item.group(1) and "$2.50</span> per GB" in item.group(1)
        action = f"/admin/upstreams/{uid}/active"
        off = {"csrf": csrf(page.text), "form_token": token(page.text, action)}
        assert (await client.post(action, data=off)).status_code == 303
        [now] = await run(platform, "operator_upstream_list", pool=pool)
        assert now["active"] is False
        page = await client.get("/admin/upstreams")
        on = {"csrf": csrf(page.text), "form_token": token(page.text, action), "active": "on"}
        assert (await client.post(action, data=on)).status_code == 303
        assert (await run(platform, "operator_upstream_list", pool=pool))[0]["active"] is True
        audit = await run(platform, "operator_audit_list", actor=email)
        actions = [e["action"] for e in audit["entries"]]
        assert actions.count("operator_upstream_add") == 1 and actions.count("operator_upstream_set") == 2
        assert "operator_upstream_check" in actions and SECRET not in str(audit)
    finally:
        target_server.close()
        await drop_pool(platform, pool)


async def test_the_margin_page_shows_the_pools_revenue_and_cost(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    pool = f"m{uuid.uuid4().hex[:10]}"
    sup = await run(platform, "operator_upstream_add", pool=pool, scheme="http", host="127.0.0.1", port=1,
                    cost_per_gb_cents=333, name="resi-one")
    product = await run(platform, "operator_product_add", name=f"Resold {pool}", kind="proxy_rotating",
                        price_cents=1_700, config={"plan": "bandwidth", "quota_bytes": 10**9,
                                                   "upstream_pool": pool})
    key = await account.key()
    await account.credit(5_000)
    bought = await client.post("/api/v1/customer/services", headers=bearer(key),
                               json={"product_id": product["product_id"]})
    assert bought.status_code == 201, bought.text
    nbytes = 1_234_567_890
    hour = utcnow().replace(minute=0, second=0, microsecond=0)
    async with platform.db.unit_of_work() as uow:
        await repo.add_usage(uow.session, [(uuid.UUID(sup["upstream_id"]), hour, 234_567_890, 10**9, 3, 1)])
        await uow.commit()
    cost = -(-nbytes * 333 // 10**9)  # 4.11 dollars and a started cent
    try:
        await sign_in(client, platform, "finance")
        page = await client.get(f"/admin/margin?days=7&pool={pool}")
        assert page.status_code == 200
        section = re.search(rf'id="margin-{pool}">(.*?)</section>', page.text, re.S)
        assert section, page.text[:2000]
        html = section.group(1)
        assert f'class="revenue">{money(1_700)}<' in html and f'class="cost">{money(cost)}<' in html
        assert f'class="margin">{money(1_700 - cost)}<' in html and "1.23 GB" in html and "3 tunnels" in html
        assert (await client.get("/admin/upstreams")).status_code == 403  # finance: no stock.read
    finally:
        await run(platform, "operator_product_set", product_id=product["product_id"], active=False)
        await drop_pool(platform, pool)


async def test_roles_see_and_act_as_the_table_says(client: httpx.AsyncClient, platform: Platform) -> None:
    await sign_in(client, platform, "viewer")
    page = await client.get("/admin/upstreams")
    assert page.status_code == 200 and 'id="upstream-add"' not in page.text and "Check now" not in page.text
    form = {"csrf": csrf(page.text), "form_token": uuid.uuid4().hex, "pool": "never", "scheme": "http",
            "host": "127.0.0.1", "port": "1"}
    refused = await client.post("/admin/upstreams", data=form)
    assert refused.status_code == 403 and "stock.write" in refused.text
    assert (await run(platform, "operator_upstream_list", pool="never")) == []
    await client.post("/admin/logout", data={"csrf": csrf(page.text)})
    await sign_in(client, platform, "support")
    refused = await client.get("/admin/margin")
    assert refused.status_code == 403 and "reports.read" in refused.text
