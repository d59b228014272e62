"""The operator's change of one service's quota (issue 32, operator_service_quota_set) on the operator API
and the operator MCP endpoint: a quota below the period's use, a zero or negative quota and a negative
per-GB rate are 422 (MCP: a validation error) naming the field and change nothing; a valid change applies."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from proxyplane.platform import Platform
from tests.adapters.admin_api.test_mcp import app, operator_client, text  # noqa: F401  (fixture)
from tests.domains.operators.helpers import make_operator
from tests.domains.quotas.support import MIB, flush, metered_service, quota_row
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio
API = "/api/admin/v1"
BAD = [
    ({"quota_bytes": 2 * MIB}, "quota_bytes"),  # below the 3 MiB used
    ({"quota_bytes": 0}, "quota_bytes"),
    ({"quota_bytes": -1}, "quota_bytes"),
    ({"gb_price_cents": -1}, "gb_price_cents"),
    ({"quota_period": "weekly"}, "quota_period"),
]


async def test_quota_change_refused_naming_the_field_on_rest_and_mcp(
    client: httpx.AsyncClient,
    app: FastAPI,  # noqa: F811
    platform: Platform,
    account: Account,
) -> None:
    svc = await metered_service(platform, account, 4 * MIB)
    await flush(platform, svc.service_id, 3 * MIB)
    _, _, key = await make_operator(platform, "admin")
    sid = str(svc.service_id)
    for n, (change, field) in enumerate(BAD):
        r = await client.post(
            f"{API}/service_quota_set",
            json={"service_id": sid, **change},
            headers={**bearer(key), "Idempotency-Key": f"bad-{n}"},
        )
        assert r.status_code == 422 and r.json()["detail"]["field"] == field, (change, r.text)
    async with operator_client(app, key) as mcp:
        for n, (change, field) in enumerate(BAD):
            result = await mcp.call_tool(
                "operator_service_quota_set", {"service_id": sid, "idempotency_key": f"mcp-{n}", **change}
            )
            assert result.is_error and f'(field="{field}")' in text(result), (change, text(result))
        row = await quota_row(platform, svc.service_id)
        assert (row.quota_bytes, row.used_bytes, row.period) == (4 * MIB, 3 * MIB, "term")
        done = await mcp.call_tool(
            "operator_service_quota_set",
            {"service_id": sid, "idempotency_key": "ok", "quota_bytes": 8 * MIB, "quota_period": "month"},
        )
    assert not done.is_error, text(done)
    row = await quota_row(platform, svc.service_id)
    assert (row.quota_bytes, row.period) == (8 * MIB, "month")
