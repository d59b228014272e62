"""Dashboard usage chart: each window is drawn as bars aligned on UTC boundaries from the series
resolution that fits (1 h = 60 minute bars, 24 h = 24 hour bars, 7 d = 42 bars of 4 h from the hourly
rollups), and the bars' totals equal the usage endpoint's totals over the same aligned window."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from proxyplane.adapters.web.charts import WINDOWS
from proxyplane.core.clock import utcnow
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import usage_values
from proxyplane.platform import Platform
from proxyplane.storage.repos.usage_minutes import add_usage
from tests.adapters.web.test_buy_and_services import COUNTRY, buy, buyer
from tests.adapters.web.test_pages import api_key
from tests.domains.stock.support import fresh_stock
from tests.support import bearer

pytestmark = pytest.mark.anyio
BAR = re.compile(r'<rect x="([\d.]+)"[^>]*><title>(\d+) requests, (\d+) errors</title>')


def test_windows_end_on_the_bar_after_now() -> None:
    now = datetime(2026, 3, 9, 13, 47, 31, 500, tzinfo=UTC)
    expected = {
        "1h": (datetime(2026, 3, 9, 12, 48, tzinfo=UTC), datetime(2026, 3, 9, 13, 48, tzinfo=UTC), 60),
        "24h": (datetime(2026, 3, 8, 14, tzinfo=UTC), datetime(2026, 3, 9, 14, tzinfo=UTC), 24),
        "7d": (datetime(2026, 3, 2, 16, tzinfo=UTC), datetime(2026, 3, 9, 16, tzinfo=UTC), 42),
    }
    for name, (start, end, bars) in expected.items():
        w = WINDOWS[name]
        assert w.bounds(now) == (start, end), name
        assert (end - start) / w.bar == bars, name
        assert w.bounds(end - timedelta(microseconds=1)) == (start, end)  # the last instant of the bar
        assert w.bounds(end) == (start + w.bar, end + w.bar)  # the next bar begins


async def test_bars_equal_the_usage_totals_of_the_aligned_window(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    await fresh_stock(platform, "proxy_datacenter", COUNTRY, 24)
    await buyer(client, platform, 50_000)
    url = (await buy(client, count=8)).headers["location"]
    sid = url.rsplit("/", 1)[1]
    key = await api_key(client, ["usage:read"])
    now = utcnow().replace(second=0, microsecond=0)
    rng = random.Random(7)
    # minutes over 8 days back (some outside every window) plus the current minute and edges of bars
    minutes = [now - timedelta(minutes=rng.randrange(8 * 1440)) for _ in range(400)] + [now]
    for w in WINDOWS.values():
        start, _ = w.bounds(now)
        minutes += [start, start - timedelta(minutes=1), start + w.bar - timedelta(minutes=1)]
    rows = [
        UsageRow(
            sid,
            m,
            rng.choice(("a.example", "b.example")),
            requests=rng.randrange(1, 30),
            connections=1,
            bytes_down=rng.randrange(9000),
            errors={"upstream": 1} if rng.random() < 0.3 else {},
        )
        for m in minutes
    ]
    values, errors = usage_values(rows)
    async with platform.db.unit_of_work() as uow:
        await add_usage(uow.session, values, errors)
        await uow.commit()

    for name, w in WINDOWS.items():
        for _ in range(3):  # a bar boundary passing between the page and the endpoint: read again
            before = w.bounds(utcnow())
            page = await client.get(f"{url}?window={name}")
            start, end = w.bounds(utcnow())
            if (start, end) == before:
                break
        assert page.status_code == 200, page.text
        bars = BAR.findall(page.text)
        assert bars and len(bars) <= (end - start) / w.bar, name
        r = await client.get(
            f"/api/v1/customer/services/{sid}/usage",
            params={"start": start.isoformat(), "end": end.isoformat()},
            headers=bearer(key),
        )
        assert r.status_code == 200, r.text
        usage = r.json()
        assert sum(int(b[1]) for b in bars) == usage["requests"] > 0, name
        assert sum(int(b[2]) for b in bars) == usage["errors"], name
        tile = re.search(r'id="usage-requests">(\d+)<', page.text)
        assert tile and int(tile.group(1)) == usage["requests"], name
        # what the test wrote, counted by hand over the aligned window
        assert usage["requests"] == sum(r.requests for r in rows if start <= r.minute < end), name
