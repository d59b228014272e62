"""Dashboard profile: billing details saved from their form (post/redirect/get), shown back, the contact
form keeps them; a bad VAT id is shown in the billing card (issue 22.8)."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.web.helpers import follow, post_form, signup

pytestmark = pytest.mark.anyio


async def test_billing_details_from_the_profile_page(client: httpx.AsyncClient) -> None:
    await signup(client)
    billing = {
        "section": "billing",
        "name": "Web User",
        "phone": "",
        "billing_company": "Acme Proxies Ltd",
        "billing_address": "1 High Street\nLondon",
        "billing_vat_id": "GB123456789",
    }
    page = await follow(client, await post_form(client, "/profile", "/profile", billing))
    assert "Billing details saved" in page.text
    assert 'value="Acme Proxies Ltd"' in page.text and "1 High Street\nLondon</textarea>" in page.text
    contact = {
        "name": "Renamed",
        "phone": "+44 20 7946 0000",
        "billing_company": "Acme Proxies Ltd",
        "billing_address": "1 High Street\nLondon",
        "billing_vat_id": "GB123456789",
    }
    page = await follow(client, await post_form(client, "/profile", "/profile", contact))
    assert 'value="Renamed"' in page.text and 'value="GB123456789"' in page.text
    bad = await post_form(client, "/profile", "/profile", {**billing, "billing_vat_id": "no<tags>"})
    assert bad.status_code == 422 and "billing_vat_id" in bad.text
