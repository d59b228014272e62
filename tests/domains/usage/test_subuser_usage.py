"""Usage per sub-user (issue 18.3): the usage, series, destinations, errors and export operations take a
subuser_id and then read that sub-user's minutes; when only sub-users used a service, the sub-users' usage
sums exactly to the service's (the gateway writes both: usage_minutes.add_usage for the service,
subusers.metering.apply_usage for the sub-user, in one flush transaction); another customer's sub-user or
a sub-user of another service is 404."""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from proxyplane.domains.subusers.metering import apply_usage
from proxyplane.platform import Platform
from proxyplane.storage.models.subusers import ServiceSubuser
from proxyplane.storage.repos.usage_minutes import add_usage
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer, make_account

pytestmark = pytest.mark.anyio
API = "/api/v1/customer/services"
BASE = datetime(2026, 4, 2, 22, 30, tzinfo=UTC)  # crosses an hour and a day boundary
HOSTS = ("a.example", "b.example", "")
COUNTERS = ("requests", "connections", "bytes_up", "bytes_down", "errors")
KEYS = ("requests", "connections", "bytes_up", "bytes_down", "bytes_total", "errors")


async def meter(platform: Platform, service_id: Any, pks: list[int], seed: int) -> None:
    """Random traffic of the sub-users, written as the gateway does: the service's rows and each
    sub-user's rows of the same requests, in one transaction per flush."""
    rng = random.Random(seed)
    for _flush in range(4):
        svc_minutes: list[dict[str, Any]] = []
        sub_minutes: list[dict[str, Any]] = []
        svc_errors: list[dict[str, Any]] = []
        sub_errors: list[dict[str, Any]] = []
        for _ in range(25):
            pk = rng.choice(pks)
            minute = BASE + timedelta(minutes=rng.randrange(180))
            host = rng.choice(HOSTS)
            counts = {c: rng.randrange(1, 500) for c in COUNTERS[:-1]}
            failed = rng.randrange(3)
            base = {"minute": minute, "host": host, **counts, "errors": failed}
            svc_minutes.append({"service_id": service_id, **base})
            sub_minutes.append({"subuser_pk": pk, **base})
            if failed:
                err = {
                    "minute": minute,
                    "host": host,
                    "category": rng.choice(("limit", "upstream")),
                    "count": failed,
                }
                svc_errors.append({"service_id": service_id, **err})
                sub_errors.append({"subuser_pk": pk, **err})
        async with platform.db.unit_of_work() as uow:
            # one row per key per statement: merge repeats the way the sink's usage_values does
            await add_usage(uow.session, merged(svc_minutes), merged(svc_errors))
            await apply_usage(uow.session, merged(sub_minutes), merged(sub_errors))
            await uow.commit()


def merged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(v for k, v in row.items() if k not in (*COUNTERS, "count"))
        if key in out:
            for c in (*COUNTERS, "count"):
                if c in row:
                    out[key][c] += row[c]
        else:
            out[key] = dict(row)
    return list(out.values())


def window(**extra: Any) -> dict[str, Any]:
    return {
        "start": (BASE - timedelta(minutes=5)).isoformat(),
        "end": (BASE + timedelta(hours=4)).isoformat(),
        **extra,
    }


async def test_subusers_sum_to_the_service(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    svc = await make_service(platform, account)
    h = bearer(await account.key())
    subs = [
        (await client.post(f"{API}/{svc.service_id}/subusers", json={}, headers=h)).json() for _ in range(2)
    ]
    async with platform.db.unit_of_work(write=False) as uow:
        ids = [s["subuser_id"] for s in subs]
        rows = await uow.session.execute(select(ServiceSubuser.subuser_id, ServiceSubuser.id))
        pk_of = {str(u): pk for u, pk in rows.all() if str(u) in ids}
    await meter(platform, svc.service_id, list(pk_of.values()), seed=18)
    url = f"{API}/{svc.service_id}/usage"

    async def get(path: str, **params: Any) -> dict[str, Any]:
        r = await client.get(url + path, params=window(**params), headers=h)
        assert r.status_code == 200, r.text
        return dict(r.json())

    whole = await get("")
    parts = [await get("", subuser_id=i) for i in ids]
    assert all(p["subuser_id"] == i for p, i in zip(parts, ids, strict=True))
    assert all(p["requests"] > 0 for p in parts)
    for k in KEYS:
        assert sum(p[k] for p in parts) == whole[k], k
    for cat, n in whole["errors_by_category"].items():
        assert sum(p["errors_by_category"].get(cat, 0) for p in parts) == n
    # the sub-user's counters move with its minutes (bytes up + down, requests)
    for p, i in zip(parts, ids, strict=True):
        got = (await client.get(f"{API}/{svc.service_id}/subusers/{i}", headers=h)).json()
        assert (got["used_bytes"], got["used_requests"]) == (p["bytes_total"], p["requests"])

    for resolution in ("minute", "hour", "day"):
        series = [await get("/series", subuser_id=i, resolution=resolution) for i in ids]
        total: dict[str, int] = {}
        for s in series:
            for point in s["points"]:
                total[point["minute"]] = total.get(point["minute"], 0) + point["bytes_total"]
        assert {
            p["minute"]: p["bytes_total"] for p in (await get("/series", resolution=resolution))["points"]
        } == total
    dest = [await get("/destinations", subuser_id=i, limit=10) for i in ids]
    by_host: dict[str, int] = {}
    for d in dest:
        for row in d["destinations"]:
            by_host[row["host"]] = by_host.get(row["host"], 0) + row["requests"]
    assert {
        r["host"]: r["requests"] for r in (await get("/destinations", limit=10))["destinations"]
    } == by_host
    errs = [await get("/errors", subuser_id=i) for i in ids]
    assert sum(sum(e["errors_by_category"].values()) for e in errs) == whole["errors"]
    exported = [await get("/export", subuser_id=i) for i in ids]
    csv_bytes = sum(
        int(r["bytes_up"]) + int(r["bytes_down"])
        for e in exported
        for r in csv.DictReader(io.StringIO(e["csv"]))
    )
    assert csv_bytes == whole["bytes_total"] and ids[0] in exported[0]["filename"]

    # 404: a sub-user of another service of the same customer, another customer's sub-user
    other_svc = await make_service(platform, account)
    r = await client.get(f"{API}/{other_svc.service_id}/usage", params=window(subuser_id=ids[0]), headers=h)
    assert r.status_code == 404
    stranger = await make_account(platform)
    r = await client.get(url, params=window(subuser_id=ids[0]), headers=bearer(await stranger.key()))
    assert r.status_code == 404
