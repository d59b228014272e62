"""Rotating connection details follow the gateway's configuration (issue 22.2): with non-default
PROXYPLANE_GATEWAY_* host and ports, a product that stored the old demo copy (8080/1080) is shown with
the configured ones in v1 (proxy/config, catalog details, service parameters), the legacy API (ppr lists,
the new-service ip, sticky server) and the dashboard's service page."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.domains.services import service as services
from proxyplane.domains.stock.seed import DEMO_PRODUCTS, seed_demo
from proxyplane.platform import Platform
from proxyplane.storage.models import CatalogProduct
from tests.adapters.legacy.support import GATEWAY, auth, buy, rotating_product
from tests.adapters.legacy.test_sticky import _session
from tests.adapters.web.helpers import login
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

HOST, HTTP, SOCKS = "127.0.0.2", 28181, 21181


@pytest.fixture
def moved_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HOST", HOST)
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HTTP_PORT", str(HTTP))
    monkeypatch.setenv("PROXYPLANE_GATEWAY_HTTPS_PORT", "-1")  # not opened: shown as null
    monkeypatch.setenv("PROXYPLANE_GATEWAY_SOCKS_PORT", str(SOCKS))


async def test_rotating_details_come_from_the_settings(
    client: httpx.AsyncClient, platform: Platform, account: Account, moved_gateway: None
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "MD", 4)
    await account.credit(10_000)
    pid, product = await rotating_product(platform)  # its config stores GATEWAY (8080/1080)
    assert product.config["gateway"] == GATEWAY
    made = await buy(client, account, pid, setip=None)
    assert made["ip"] == HOST
    async with platform.db.unit_of_work(write=False) as uow:
        svc = await services.get_by_number(uow.session, made["serviceId"])
        assert svc is not None and "gateway" not in (svc.parameters or {})
        sid, login_name = str(svc.service_id), svc.login
        password = services.reveal_password(platform.secrets, svc)

    key = await account.key()
    cfg = (await client.get(f"/api/v1/customer/services/{sid}/proxy/config", headers=bearer(key))).json()
    assert (cfg["host"], cfg["http_port"], cfg["https_port"], cfg["socks5_port"]) == (HOST, HTTP, None, SOCKS)
    got = (await client.get(f"/api/v1/customer/catalog/{product.product_id}", headers=bearer(key))).json()
    assert "gateway" not in got["details"] and got["details"]["exit_pool"] == "proxy_datacenter"

    number = made["serviceId"]
    http = (await client.get(f"/api/iplist/ppr-http/txt/{number}", headers=auth(account))).text
    socks = (await client.get(f"/api/iplist/ppr-socks/json/{number}", headers=auth(account))).json()
    assert http == f"{login_name}:{password}@{HOST}:{HTTP}\r\n"
    assert socks == [f"socks5h://{login_name}:{password}@{HOST}:{SOCKS}"]
    await _session(platform, sid, "alpha", "127.0.0.1")
    sessions = (await client.get(f"/api/sticky/list/{number}", headers=auth(account))).json()
    assert [(s["session"], s["server"]) for s in sessions] == [("alpha", HOST)]

    await login(client, account.email, account.password)
    page = (await client.get(f"/services/{sid}")).text
    assert f"<code>{HOST}</code>" in page and f"HTTP {HTTP}" in page and f"SOCKS5 {SOCKS}" in page
    facts = page.split("Rotating gateway", 1)[1].split("</dl>")[0]
    assert "HTTP 8080" not in facts and "1080" not in facts and "HTTPS" not in facts


async def test_a_closed_rotating_port_lists_nothing(
    client: httpx.AsyncClient, platform: Platform, account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXYPLANE_GATEWAY_SOCKS_PORT", "-1")
    await account.credit(10_000)
    made = await buy(client, account, (await rotating_product(platform))[0], setip=None)
    r = await client.get(f"/api/iplist/ppr-socks/txt/{made['serviceId']}", headers=auth(account))
    assert (r.status_code, r.text) == (200, "")


async def test_demo_catalog_stores_no_gateway_and_reseeding_drops_the_old_copy(platform: Platform) -> None:
    assert all("gateway" not in spec["config"] for spec in DEMO_PRODUCTS)
    name = next(spec["name"] for spec in DEMO_PRODUCTS if spec["kind"] == "proxy_rotating")
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        row = (await uow.session.execute(CatalogProduct.__table__.select())).all()
        product = await uow.session.get(CatalogProduct, next(r.product_id for r in row if r.name == name))
        assert product is not None
        product.config = {**product.config, "gateway": GATEWAY}  # as an older seed stored it
        await uow.commit()
    async with platform.db.unit_of_work() as uow:
        await seed_demo(uow.session)
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        product = await uow.session.get(CatalogProduct, product.product_id)
        assert product is not None and "gateway" not in product.config
        assert product.config["exit_pool"] == "proxy_datacenter"
