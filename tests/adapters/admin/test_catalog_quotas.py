"""The console's catalog page sets a rotating product's traffic (issue 32, through operator_product_set):
its quota in GB, the period and the per-GB rate, or a pay-as-you-go product's rate per started unit; the
product line shows them; bad values are 422 naming the field and change nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest

from proxyplane.platform import Platform
from tests.adapters.admin.test_catalog_pages import token
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import run

pytestmark = pytest.mark.anyio
GB = 10**9


async def rotating(platform: Platform, config: dict[str, object]) -> str:
    made = await run(
        platform,
        "operator_product_add",
        name=f"Metered console {uuid.uuid4().hex[:8]}",
        kind="proxy_rotating",
        price_cents=500,
        config={"exit_pool": "proxy_datacenter", **config},
    )
    return str(made["product_id"])


async def config_of(platform: Platform, pid: str) -> dict[str, object]:
    listed = {p["product_id"]: p for p in await run(platform, "operator_product_list")}
    config: dict[str, object] = listed[pid]["config"]
    return config


async def test_console_sets_quota_period_and_gb_price(client: httpx.AsyncClient, platform: Platform) -> None:
    pid = await rotating(
        platform, {"plan": "bandwidth", "quota_bytes": 2 * GB, "quota_period": "term", "gb_price_cents": 100}
    )
    payg = await rotating(platform, {"plan": "payg", "gb_price_cents": 200})
    await sign_in(client, platform, "admin")
    page = await client.get("/admin/catalog")
    assert "2 GB · period term · 100 ¢ per GB added" in page.text
    assert "pay as you go · 200 ¢ per started unit" in page.text
    action = f"/admin/catalog/products/{pid}"

    async def post(fields: dict[str, str], to: str = action) -> httpx.Response:
        shown = await client.get("/admin/catalog")
        form = {"csrf": csrf(shown.text), "form_token": token(shown.text, to), "price": "5.00", "active": ""}
        return await client.post(to, data={**form, **fields})

    before = await config_of(platform, pid)
    for fields, field in (
        ({"quota_gb": "0"}, "quota_bytes"),
        ({"quota_gb": "lots"}, "quota_bytes"),
        ({"gb_price_cents": "-1"}, "gb_price_cents"),
        ({"quota_period": "weekly"}, "quota_period"),
    ):
        refused = await post(fields)
        assert refused.status_code == 422 and field in refused.text, (fields, refused.text)
    assert await config_of(platform, pid) == before

    done = await post({"quota_gb": "10", "quota_period": "month", "gb_price_cents": "150"})
    assert done.status_code == 303, done.text
    got = await config_of(platform, pid)
    assert (got["quota_bytes"], got["quota_period"], got["gb_price_cents"]) == (10 * GB, "month", 150)
    assert "10 GB · period month · 150 ¢ per GB added" in (await client.get("/admin/catalog")).text

    done = await post({"gb_price_cents": "250"}, f"/admin/catalog/products/{payg}")
    assert done.status_code == 303, done.text
    got = await config_of(platform, payg)
    assert (got["plan"], got["gb_price_cents"]) == ("payg", 250) and "quota_bytes" not in got
    (entry, *_) = (await run(platform, "operator_audit_list", action="operator_product_set"))["entries"]
    assert entry["target"] == f"product:{payg}" and entry["after"]["config"]["gb_price_cents"] == 250
