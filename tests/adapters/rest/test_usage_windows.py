"""GET .../usage over windows that cross hour and day boundaries (read from the rollups) equals the
minute-level answer exactly, and the CSV export of the same window sums to it."""

from __future__ import annotations

import csv
import io
import random
import uuid
from datetime import timedelta

import httpx
import pytest

from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from tests.adapters.rest.test_order import ORDER, body
from tests.domains.stock.support import fresh_stock
from tests.domains.usage.test_rollups import BASE, COUNTERS, random_rows, reference
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio


async def test_usage_endpoint_and_export_across_rollups(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    await fresh_stock(platform, "proxy_datacenter", "IS", 8)
    await account.credit(50_000)
    key = await account.key()
    r = await client.post(ORDER, json=body("IS", count=8), headers=bearer(key))
    assert r.status_code == 201, r.text
    sid = r.json()["service"]["service_id"]
    rows = random_rows(random.Random(11), sid, 300)
    await write_usage(platform.db, rows[:200])
    await write_usage(platform.db, rows[150:])  # a second node: 50 rows again, adding up

    url = f"/api/v1/customer/services/{sid}/usage"
    for start, end in (
        (BASE + timedelta(minutes=7, seconds=40), BASE + timedelta(days=2, hours=5, minutes=1, seconds=1)),
        (BASE, BASE + timedelta(days=3)),
        (BASE + timedelta(hours=3), BASE + timedelta(days=1, hours=3)),
    ):
        window = {"start": start.isoformat(), "end": end.isoformat()}
        got = (await client.get(url, params=window, headers=bearer(key))).json()
        ref = await reference(platform, uuid.UUID(sid), start, end)
        assert tuple(got[c] for c in COUNTERS) == ref["total"]
        assert got["errors_by_category"] == ref["errors"]
        assert got["bytes_total"] == got["bytes_up"] + got["bytes_down"]
        export = (await client.get(f"{url}/export", params=window, headers=bearer(key))).json()
        lines = list(csv.DictReader(io.StringIO(export["csv"])))
        assert len(lines) == export["rows"] > 0
        assert tuple(sum(int(x[c]) for x in lines) for c in COUNTERS) == ref["total"]
        for resolution in ("minute", "hour", "day"):
            params = {**window, "resolution": resolution}
            points = (await client.get(f"{url}/series", params=params, headers=bearer(key))).json()["points"]
            assert tuple(sum(p[c] for p in points) for c in COUNTERS) == ref["total"], resolution
    bad = {**window, "resolution": "week"}
    assert (await client.get(f"{url}/series", params=bad, headers=bearer(key))).status_code == 422
