"""`proxyplane admin product add|set` (issue 32): the operator sets a product's traffic quota, period and
per-GB rate (copied to the services bought from then on); bad values are refused naming the field."""

from __future__ import annotations

import json
import uuid

from tests.cli.test_admin import cli  # noqa: F401  (fixture)


def test_operator_sets_quota_period_and_gb_price(cli) -> None:  # noqa: F811
    name = f"Metered {uuid.uuid4().hex[:8]}"
    config = {"plan": "bandwidth", "quota_bytes": 2_000_000_000, "exit_pool": "proxy_datacenter"}
    code, out, err = cli(
        "admin", "product", "add", "--name", name, "--kind", "proxy_rotating", "--price-cents", "300",
        "--config", json.dumps(config),
    )  # fmt: skip
    assert code == 0, err
    product = json.loads(out)
    pid = product["product_id"]
    code, out, err = cli(
        "admin",
        "product",
        "set",
        pid,
        "--quota-gb",
        "5",
        "--quota-period",
        "month",
        "--gb-price-cents",
        "200",
    )
    assert code == 0, err
    got = json.loads(out)["config"]
    assert (got["quota_bytes"], got["quota_period"], got["gb_price_cents"]) == (5_000_000_000, "month", 200)

    code, _, err = cli("admin", "product", "set", pid, "--quota-gb", "0")
    assert code != 0 and "quota_bytes" in err
    code, _, err = cli("admin", "product", "set", pid, "--gb-price-cents", "-1")
    assert code != 0 and "gb_price_cents" in err
    bad = {**config, "quota_period": "weekly"}
    code, _, err = cli(
        "admin", "product", "add", "--name", f"{name} bad", "--kind", "proxy_rotating", "--price-cents", "1",
        "--config", json.dumps(bad),
    )  # fmt: skip
    assert code != 0 and "quota_period" in err
    cli("admin", "product", "set", pid, "--inactive")  # leave nothing on sale for others


def test_operator_changes_one_services_quota_never_below_its_use(cli) -> None:  # noqa: F811
    import asyncio

    from proxyplane.core.settings import get_settings
    from proxyplane.platform import Platform
    from tests.domains.quotas.support import MIB, flush, metered_service
    from tests.support import make_account

    async def made() -> str:
        platform = Platform(get_settings())
        try:
            account = await make_account(platform)
            svc = await metered_service(platform, account, 4 * MIB)
            await flush(platform, svc.service_id, 3 * MIB)
            return str(svc.service_id)
        finally:
            await platform.close()

    sid = asyncio.run(made())
    call = ("admin", "operator", "call", "operator_service_quota_set", "--input")
    code, _, err = cli(*call, json.dumps({"service_id": sid, "quota_bytes": 2 * MIB}))
    assert code != 0 and "quota_bytes" in err and "below" in err
    code, out, err = cli(
        *call, json.dumps({"service_id": sid, "quota_bytes": 8 * MIB, "quota_period": "month"})
    )
    assert code == 0, err
    got = json.loads(out)
    assert (got["limit_bytes"], got["used_bytes"], got["period"]) == (8 * MIB, 3 * MIB, "month")
