"""View the dashboard as the customer (issue 33): from the console's customer page a support operator
opens a read-only view of the customer's dashboard; its pages show the customer's data with passwords
masked, every form and every write is refused, the view's token is never a customer's session, the
opening is one audit row (no token in it), a role without customers.view_as is refused, the CLI door
prints the link."""

from __future__ import annotations

import json
import re
import uuid

import httpx
import pytest

from proxyplane.core.errors import Forbidden
from proxyplane.platform import Platform
from tests.adapters.admin.test_console import csrf, sign_in
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.operators.helpers import make_operator, operator_caller, run
from tests.domains.stock.support import fresh_stock
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


def _keys(listed: httpx.Response) -> list[dict[str, object]]:
    """The customer's keys as the view could have changed them (the key's own last use moves with this
    test's calls, minutes apart on a loaded host)."""
    skip = {"last_used_at", "last_used_ip"}
    return [{k: v for k, v in row.items() if k not in skip} for row in listed.json()]


async def open_view(client: httpx.AsyncClient, customer_id: int) -> httpx.Response:
    page = await client.get(f"/admin/customers/{customer_id}")
    assert page.status_code == 200
    token = re.search(
        r'action="/admin/customers/\d+/view-as".*?name="form_token" value="(\w+)"', page.text, re.S
    )
    assert token, "the customer page offers the view"
    return await client.post(
        f"/admin/customers/{customer_id}/view-as",
        data={"csrf": csrf(page.text), "form_token": token.group(1)},
    )


async def test_read_only_view_of_the_dashboard(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 10)
    key = await account.key()
    await account.credit(10_000)
    ordered = await client.post(ORDER, json=body(count=8), headers=bearer(key))
    assert ordered.status_code == 201, ordered.text
    sid = ordered.json()["service"]["service_id"]
    auth = await client.get(
        f"/api/v1/customer/services/{sid}/proxy/auth", params={"reveal": "true"}, headers=bearer(key)
    )
    password = auth.json()["password"]
    assert auth.status_code == 200 and "*" not in password
    keys_before = _keys(await client.get("/api/v1/customers/me/api-keys", headers=bearer(key)))

    email, _ = await sign_in(client, platform, "support")
    opened = await open_view(client, account.customer_id)
    assert opened.status_code == 303 and opened.headers["location"].startswith("/view-as/")
    token = opened.headers["location"].removeprefix("/view-as/")
    landed = await client.get(opened.headers["location"])
    assert landed.status_code == 303 and landed.headers["location"] == "/overview"
    overview = await client.get("/overview")
    assert overview.status_code == 200 and 'id="view-as"' in overview.text
    assert account.email in overview.text and email in overview.text
    for menu in (
        "/buy",
        "/services",
        "/wallet",
        "/invoices",
        "/keys",
        "/webhooks",
        "/tickets",
        "/team",
        "/profile",
    ):
        shown = await client.get(menu)
        assert shown.status_code == 200 and 'id="view-as"' in shown.text, menu
    service = await client.get(f"/services/{sid}")
    assert service.status_code == 200 and "Read-only view" in service.text
    assert password not in service.text  # masked, and nothing asks to reveal it
    download = await client.get(
        f"/services/{sid}/endpoints.txt", params={"format": "login_password_at_ip_port"}
    )
    assert password not in download.text

    for path, form in (
        ("/keys", {"name": "from the view"}),
        (f"/services/{sid}/credentials", {"do": "reveal"}),
        ("/logout", {}),
    ):
        refused = await client.post(path, data={"csrf": "x", **form})
        assert refused.status_code == 403 and "read-only view" in refused.text, path
    assert _keys(await client.get("/api/v1/customers/me/api-keys", headers=bearer(key))) == keys_before

    # the view's token is no customer session: in the customer's own cookie it signs nobody in
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as other:
        other.cookies.set("pp_session", token)
        assert (await other.get("/overview")).status_code == 303

    (row,) = (
        await run(
            platform,
            "operator_audit_list",
            actor=email,
            action="operator_customer_view_as",
        )
    )["entries"]
    assert row["door"] == "console" and row["role"] == "support"
    assert row["target"] == f"customer:{account.customer_id}" and row["after"]["read_only"] is True
    assert token not in json.dumps(row)

    ended = await client.post("/view-as/end")
    assert ended.status_code == 303
    assert (await client.get("/overview")).status_code == 303  # the view is gone from this browser


async def test_roles_and_the_cli_door(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await sign_in(client, platform, "viewer")
    page = await client.get(f"/admin/customers/{account.customer_id}")
    assert page.status_code == 200 and "/view-as" not in page.text
    refused = await client.post(
        f"/admin/customers/{account.customer_id}/view-as",
        data={"csrf": csrf(page.text), "form_token": uuid.uuid4().hex},
    )
    assert refused.status_code == 403 and "customers.view_as" in refused.text
    with pytest.raises(Forbidden):
        await run(platform, "operator_customer_view_as", operator_caller("finance"), customer_id=1)
    _, _, api_key = await make_operator(platform, "owner")  # not on the operator API: the link is a secret
    api = await client.post(
        "/api/admin/v1/customer_view_as", json={"customer_id": account.customer_id}, headers=bearer(api_key)
    )
    assert api.status_code in (404, 405)
    printed = await run(platform, "operator_customer_view_as", customer_id=account.customer_id)
    assert printed["viewed_by"] == "cli" and printed["email"] == account.email
    path = printed["view_url"].split("://", 1)[-1].partition("/")[2]
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as browser:
        assert (await browser.get("/" + path)).headers["location"] == "/overview"
        shown = await browser.get("/overview")
        assert shown.status_code == 200 and "by cli" in shown.text


async def test_a_stale_view_link_is_a_404_page_and_sets_no_cookie(client: httpx.AsyncClient) -> None:
    """A made-up (or ended, or expired) view token: the page says the link expired; no view cookie."""
    r = await client.get(f"/view-as/{uuid.uuid4().hex}")
    assert r.status_code == 404 and "view link" in r.text.lower()
    assert "pp_view_as" not in r.headers.get("set-cookie", "")
