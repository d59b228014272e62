"""The console's catalog and prices page (issue 33): products and price books shown; an admin edits a
product's price and a pool's price book (audited, before -> after) and resets it; an invalid book is
refused with nothing stored; a viewer sees no form and is refused (403 naming catalog.write, audited)."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from proxyplane.domains.pricing.rules import DEFAULT_PRICEBOOKS
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import run

pytestmark = pytest.mark.anyio
KIND = "proxy_isp"


def token(html: str, action: str) -> str:
    found = re.search(
        rf'action="{re.escape(action)}"[^>]*>\s*<input type="hidden" name="csrf" value="[^"]+">'
        r'<input type="hidden" name="form_token" value="([^"]+)"',
        html,
    )
    assert found, action
    return found.group(1)


async def new_product(platform: Platform) -> dict[str, object]:
    made: dict[str, object] = await run(
        platform,
        "operator_product_add",
        name=f"Console test {uuid.uuid4().hex[:8]}",
        kind="proxy_isp",
        price_cents=1500,
        config={"ip_count": 1, "country": "US"},
    )
    return made


async def test_edit_a_product_and_a_price_book(client: httpx.AsyncClient, platform: Platform) -> None:
    product = await new_product(platform)
    pid = product["product_id"]
    email, _ = await sign_in(client, platform, "admin")
    page = await client.get("/admin/catalog")
    assert page.status_code == 200 and str(product["name"]) in page.text and f'id="book-{KIND}"' in page.text
    action = f"/admin/catalog/products/{pid}"
    form = {"csrf": csrf(page.text), "form_token": token(page.text, action), "price": "19.90"}  # off sale
    assert (await client.post(action, data=form)).status_code == 303
    assert (await client.post(action, data=form)).status_code == 409  # the same form acts once
    listed = {p["product_id"]: p for p in await run(platform, "operator_product_list")}
    assert listed[pid]["price_cents"] == 1990 and listed[pid]["active"] is False
    (entry,) = (await run(platform, "operator_audit_list", actor=email, action="operator_product_set"))[
        "entries"
    ]
    assert entry["target"] == f"product:{pid}"
    assert entry["before"]["price_cents"] == 1500 and entry["before"]["active"] is True
    assert entry["after"]["price_cents"] == 1990 and entry["after"]["active"] is False

    before = (await run(platform, "operator_price_show", kind=KIND))[KIND]
    page = await client.get("/admin/catalog")
    prices = f"/admin/catalog/prices/{KIND}"
    book = {
        "csrf": csrf(page.text),
        "form_token": token(page.text, prices),
        "base_price_cents": str(before["base_price_cents"] + 7),
        "min_order_ips": "2",
        "min_order_cents": str(before["min_order_cents"]),
        "refresh_price_cents_per_ip": "4",
        "volume_tiers": f"1 {before['base_price_cents'] + 7}\n25 {before['base_price_cents']}\n",
        "term_discounts": "1 0\n3 6\n12 20\n",
    }
    try:
        assert (await client.post(prices, data=book)).status_code == 303
        now = (await run(platform, "operator_price_show", kind=KIND))[KIND]
        assert now["base_price_cents"] == before["base_price_cents"] + 7 and now["min_order_ips"] == 2
        assert [t["min_ips"] for t in now["volume_tiers"]] == [1, 25]
        assert [(t["months"], t["percent"]) for t in now["term_discounts"]] == [(1, 0), (3, 6), (12, 20)]
        shown = await client.get("/admin/catalog")
        assert "3 mo −6 %" in shown.text
        (changed,) = (await run(platform, "operator_audit_list", actor=email, action="operator_price_set"))[
            "entries"
        ]
        assert changed["target"] == f"kind:{KIND}" and changed["door"] == "console"
        assert changed["before"]["base_price_cents"] == before["base_price_cents"]
        assert changed["after"]["base_price_cents"] == before["base_price_cents"] + 7
        # a tier dearer than the base price: refused, nothing stored
        bad = {**book, "form_token": token(shown.text, prices), "volume_tiers": "1 9999\n"}
        refused = await client.post(prices, data=bad)
        assert refused.status_code == 422 and "base_price_cents" in refused.text
        assert (await run(platform, "operator_price_show", kind=KIND))[KIND] == now
        garbled = {**book, "form_token": token(shown.text, prices), "term_discounts": "three 5\n"}
        assert (await client.post(prices, data=garbled)).status_code == 422
    finally:
        shown = await client.get("/admin/catalog")
        reset = f"{prices}/reset"
        done = await client.post(
            reset, data={"csrf": csrf(shown.text), "form_token": token(shown.text, reset)}
        )
        assert done.status_code == 303
    default = DEFAULT_PRICEBOOKS[KIND].base_price_cents
    assert (await run(platform, "operator_price_show", kind=KIND))[KIND]["base_price_cents"] == default
    reset_rows = await run(platform, "operator_audit_list", actor=email, action="operator_price_reset")
    assert reset_rows["entries"][0]["before"]["base_price_cents"] == before["base_price_cents"] + 7


async def test_a_viewer_reads_but_may_not_edit(client: httpx.AsyncClient, platform: Platform) -> None:
    product = await new_product(platform)
    await run(platform, "operator_product_set", product_id=product["product_id"], active=False)
    email, _ = await sign_in(client, platform, "viewer")
    page = await client.get("/admin/catalog")
    assert page.status_code == 200 and str(product["name"]) in page.text
    assert "Save prices" not in page.text and 'class="filters product-form"' not in page.text
    refused = await client.post(
        f"/admin/catalog/products/{product['product_id']}",
        data={"csrf": csrf(page.text), "price": "1.00", "active": "on"},
    )
    assert refused.status_code == 403 and "catalog.write" in refused.text
    (entry,) = (await run(platform, "operator_audit_list", actor=email, outcome="refused"))["entries"]
    assert entry["action"] == "operator_product_set" and entry["target"] == ""
    listed = {p["product_id"]: p for p in await run(platform, "operator_product_list")}
    assert listed[product["product_id"]]["price_cents"] == 1500
