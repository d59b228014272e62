"""Dashboard webhooks pages: create (secret once), edit, disable/enable, rotate (secret once), test event,
deliveries against a real loopback receiver (status, attempts, response code, truncated body), redeliver,
delete with confirmation; every form CSRF-checked. The REST API sees each change."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from proxyplane.core.settings import Settings
from proxyplane.jobs.webhooks import WebhookWorker
from proxyplane.platform import Platform
from tests.adapters.web.helpers import csrf_of, follow, post_form, signup
from tests.jobs.receiver import Receiver, loopback_webhooks, running_receiver
from tests.support import bearer

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/webhooks"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return loopback_webhooks(settings, webhook_max_attempts=1)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with running_receiver() as r:
        yield r


async def web_user_with_key(client: httpx.AsyncClient) -> dict[str, str]:
    """Sign up in the dashboard and make a `webhooks` API key there, to look through the REST API."""
    await signup(client)
    made = await follow(
        client, await post_form(client, "/keys", "/keys", {"name": "rest view", "scopes": ["webhooks"]})
    )
    return bearer(made.text.split('id="secret">', 1)[1].split("<", 1)[0])


def shown_secret(page: httpx.Response) -> str:
    found = re.search(r'id="secret">(whsec_[^<]+)<', page.text)
    assert found, page.text
    return found.group(1)


async def drain(platform: Platform, done: int, client: httpx.AsyncClient, url: str, auth: dict) -> list[dict]:
    """Run the real delivery worker until `done` deliveries of the endpoint are finished."""
    async with WebhookWorker(platform, name="web-test-worker") as worker:
        for _ in range(500):
            items = (await client.get(f"{url}/deliveries", headers=auth)).json()["items"]
            if sum(d["status"] in ("succeeded", "failed") for d in items) >= done:
                return list(items)
            if await worker.run_once() == 0:
                await asyncio.sleep(0.01)
    raise AssertionError("deliveries did not finish")


async def test_webhook_pages_do_what_the_api_shows(
    client: httpx.AsyncClient, platform: Platform, receiver: Receiver
) -> None:
    auth = await web_user_with_key(client)
    listing = await client.get("/webhooks")
    assert listing.status_code == 200 and "No webhook endpoints yet." in listing.text
    assert 'href="/webhooks"' in listing.text  # the menu link
    for t in (await client.get(f"{API}/events", headers=auth)).json():
        assert f'name="event_types" value="{t["type"]}"' in listing.text

    fields: dict[str, object] = {
        "url": receiver.url,
        "description": "billing",
        "event_types": ["wallet.credited"],
    }
    refused = await client.post("/webhooks", data={"csrf": "forged", **fields})
    assert refused.status_code == 403 and (await client.get(API, headers=auth)).json() == []
    bad = await post_form(client, "/webhooks", "/webhooks", {**fields, "url": "https://10.1.2.3/h"})
    assert bad.status_code == 422 and 'role="alert"' in bad.text and 'value="https://10.1.2.3/h"' in bad.text

    created = await follow(client, await post_form(client, "/webhooks", "/webhooks", fields))
    first_secret = shown_secret(created)
    assert first_secret not in (await client.get("/webhooks")).text  # a reload shows it no more
    [rest] = (await client.get(API, headers=auth)).json()
    assert (rest["url"], rest["description"], rest["event_types"]) == (
        receiver.url,
        "billing",
        ["wallet.credited"],
    )
    page_url = f"/webhooks/{rest['endpoint_id']}"
    url = f"{API}/{rest['endpoint_id']}"
    page = await client.get(page_url)
    assert page.status_code == 200 and first_secret not in page.text
    assert "shown only once" not in (await client.get("/webhooks")).text

    # edit: description and event types; a wrong type is shown next to the form
    edit: dict[str, object] = {
        "url": receiver.url,
        "description": "billing v2",
        "event_types": ["wallet.credited", "api_key.created"],
    }
    saved = await post_form(client, page_url, page_url, edit)
    assert saved.status_code == 303 and saved.headers["location"] == page_url
    got = (await client.get(url, headers=auth)).json()
    assert got["description"] == "billing v2" and got["event_types"] == ["api_key.created", "wallet.credited"]
    wrong = await post_form(client, page_url, page_url, {**edit, "event_types": ["no.such"]})
    assert wrong.status_code == 422 and "no.such" in wrong.text
    everything = await post_form(client, page_url, page_url, {"url": receiver.url, "description": ""})
    assert everything.status_code == 303 and (await client.get(url, headers=auth)).json()["event_types"] == []

    # disable: the test button is refused (409, shown on the page); enable again
    assert (await client.post(f"{page_url}/disable", data={"csrf": "x"})).status_code == 403
    assert (await post_form(client, page_url, f"{page_url}/disable", {})).status_code == 303
    assert (await client.get(url, headers=auth)).json()["enabled"] is False
    assert 'id="state">disabled' in (await client.get(page_url)).text
    page = await client.get(page_url)
    blocked = await client.post(f"{page_url}/test", data={"csrf": csrf_of(page)})
    assert blocked.status_code == 409 and 'role="alert"' in blocked.text
    assert (await post_form(client, page_url, f"{page_url}/enable", {})).status_code == 303
    assert (await client.get(url, headers=auth)).json()["enabled"] is True

    # rotate: the new secret is shown once and signs what is sent next
    rotated = await follow(client, await post_form(client, page_url, f"{page_url}/rotate-secret", {}))
    secret = shown_secret(rotated)
    assert secret != first_secret and secret not in (await client.get(page_url)).text

    # test event: the receiver answers 500 (one attempt allowed here), so the delivery fails
    receiver.status = 500
    queued = await post_form(client, page_url, f"{page_url}/test", {})
    assert queued.status_code == 303
    [failed] = await drain(platform, 1, client, url, auth)
    assert (failed["event_type"], failed["status"], failed["attempts"]) == ("webhook.test", "failed", 1)
    assert failed["response_status_code"] == 500 and len(failed["response_body"]) == 1000
    page = await client.get(page_url)
    row = page.text.split(f'deliveries/{failed["delivery_id"]}"', 1)[1].split("</tr>", 1)[0]
    assert "failed" in row and ">500<" in row and "x" * 27 + "…" in row and "x" * 29 not in row

    # redeliver: a new delivery of the same event (same webhook-id) now succeeds, signed with the new secret
    receiver.status = 200
    again = await post_form(client, page_url, f"{page_url}/deliveries/{failed['delivery_id']}/redeliver", {})
    assert again.status_code == 303
    items = await drain(platform, 2, client, url, auth)
    assert [(d["status"], d["webhook_id"]) for d in items] == [
        ("succeeded", failed["webhook_id"]),
        ("failed", failed["webhook_id"]),
    ]
    [payload] = receiver.verified(secret)
    assert payload["type"] == "webhook.test" and payload["id"] == failed["webhook_id"]
    page = await client.get(f"{page_url}?status=succeeded")
    assert ">200<" in page.text and "<code>ok</code>" in page.text and failed["delivery_id"] not in page.text
    detail = await client.get(f"{page_url}/deliveries/{items[0]['delivery_id']}")
    assert detail.status_code == 200 and failed["webhook_id"] in detail.text and "webhook.test" in detail.text

    # delete: a confirmation page first, then the endpoint is gone from the API too
    confirm = await client.get(f"{page_url}/delete")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.text
    assert (await client.post(f"{page_url}/delete", data={"csrf": "x"})).status_code == 403
    assert (await client.get(url, headers=auth)).status_code == 200
    gone = await client.post(f"{page_url}/delete", data={"csrf": csrf_of(confirm)})
    assert gone.status_code == 303 and gone.headers["location"] == "/webhooks"
    assert (await client.get(url, headers=auth)).status_code == 404
    assert (await client.get(page_url)).status_code == 404


async def test_another_customers_endpoint_is_not_found(client: httpx.AsyncClient, receiver: Receiver) -> None:
    await signup(client)
    made = await follow(client, await post_form(client, "/webhooks", "/webhooks", {"url": receiver.url}))
    endpoint_id = made.text.split('href="/webhooks/', 1)[1].split('"', 1)[0]
    client.cookies.clear()
    await signup(client)
    assert (await client.get(f"/webhooks/{endpoint_id}")).status_code == 404
    assert (await post_form(client, "/webhooks", f"/webhooks/{endpoint_id}/disable", {})).status_code == 404
    assert (await client.get("/webhooks/not-a-uuid")).status_code == 404


async def test_the_same_create_form_twice_adds_one_endpoint(
    client: httpx.AsyncClient, receiver: Receiver
) -> None:
    auth = await web_user_with_key(client)
    page = await client.get("/webhooks")
    token = re.search(r'name="form_token" value="([^"]+)"', page.text)
    assert token
    form = {"csrf": csrf_of(page), "form_token": token.group(1), "url": receiver.url}
    first, second = await client.post("/webhooks", data=form), await client.post("/webhooks", data=form)
    assert first.status_code == second.status_code == 303
    assert "already sent" in (await follow(client, second)).text
    assert len((await client.get(API, headers=auth)).json()) == 1
