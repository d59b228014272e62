"""The console's page of one service's traffic quota (issue 32): linked from the customer's page, it shows
the period's use, limit, bought traffic and rate (operator_service_quota_show); an admin changes the quota,
its period and the per-GB rate (operator_service_quota_set, audited); a quota below the period's use or a
bad number is 422 naming the field and changes nothing; a viewer reads it but has no form and is refused
(403 naming catalog.write); a service without a quota is a 404."""

from __future__ import annotations

import httpx
import pytest

from proxyplane.core.clock import as_utc, utcnow
from proxyplane.domains.quotas import service as quotas
from proxyplane.platform import Platform
from tests.adapters.admin.test_catalog_pages import token
from tests.adapters.admin.test_console import csrf, sign_in
from tests.domains.operators.helpers import run
from tests.domains.quotas.support import flush, metered_service, quota_row
from tests.domains.subusers.support import make_service
from tests.support import Account

pytestmark = pytest.mark.anyio
GB = 10**9


async def test_console_changes_one_services_quota(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, 4 * GB, period="term", gb_price_cents=250)
    await flush(platform, svc.service_id, 3 * GB)
    email, _ = await sign_in(client, platform, "admin")
    customer = await client.get(f"/admin/customers/{account.customer_id}")
    url = f"/admin/quotas/{svc.service_id}"
    assert f'href="{url}"' in customer.text
    page = await client.get(url)
    assert page.status_code == 200
    assert "3 of 4 GB used · period term" in page.text and "250 ¢ per GB added" in page.text

    async def post(fields: dict[str, str]) -> httpx.Response:
        shown = await client.get(url)
        return await client.post(
            url, data={"csrf": csrf(shown.text), "form_token": token(shown.text, url), **fields}
        )

    for fields, field in (
        ({"quota_gb": "2"}, "quota_bytes"),  # below the 3 GB used
        ({"quota_gb": "none"}, "quota_bytes"),
        ({"gb_price_cents": "-5"}, "gb_price_cents"),
        ({"quota_period": "weekly"}, "quota_period"),
    ):
        refused = await post(fields)
        assert refused.status_code == 422 and field in refused.text, (fields, refused.text)
    row = await quota_row(platform, svc.service_id)
    assert (row.quota_bytes, row.period, row.gb_price_cents) == (4 * GB, "term", 250)

    before = utcnow()
    done = await post({"quota_gb": "10", "quota_period": "month", "gb_price_cents": "300"})
    assert done.status_code == 303 and done.headers["location"] == f"{url}?done=quota+saved"
    row = await quota_row(platform, svc.service_id)
    assert (row.quota_bytes, row.period, row.gb_price_cents) == (10 * GB, "month", 300)
    # the new kind's bounds, the use so far kept: this calendar month, reset at the next one's start
    months = {quotas.month_bounds(before), quotas.month_bounds(utcnow())}  # one, unless a month just ended
    assert (as_utc(row.period_start), as_utc(row.resets_at)) in months and row.used_bytes == 3 * GB
    shown = await client.get(done.headers["location"])
    assert "3 of 10 GB used · period month, resets " in shown.text and "Done: quota saved" in shown.text
    (entry,) = (await run(platform, "operator_audit_list", actor=email, action="operator_service_quota_set"))[
        "entries"
    ]
    assert entry["door"] == "console"

    plain = await make_service(platform, account)
    assert (await client.get(f"/admin/quotas/{plain.service_id}")).status_code == 404


async def test_a_viewer_reads_a_quota_but_may_not_change_it(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await metered_service(platform, account, 4 * GB)
    await sign_in(client, platform, "viewer")
    url = f"/admin/quotas/{svc.service_id}"
    page = await client.get(url)
    assert page.status_code == 200 and "0 of 4 GB used" in page.text and 'id="quota-form"' not in page.text
    refused = await client.post(url, data={"csrf": csrf(page.text), "quota_gb": "8"})
    assert refused.status_code == 403 and "catalog.write" in refused.text
    assert (await quota_row(platform, svc.service_id)).quota_bytes == 4 * GB
