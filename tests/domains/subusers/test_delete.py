"""Deleting a sub-user (issue 18): its usage and sticky sessions go with it and its id is never given to a
new sub-user (on SQLite ids were reused: a new sub-user inherited the deleted one's usage rows), while the
service's own usage rows stay as they were. Usage is written by the gateway's real usage writer
(usage_sink.write_usage)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from proxyplane.domains.subusers.service import usage_tables
from proxyplane.gateway.metering import UsageRow
from proxyplane.gateway.usage_sink import write_usage
from proxyplane.platform import Platform
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.adapters.legacy.test_sticky import _session
from tests.domains.subusers.support import make_service
from tests.support import Account, bearer

pytestmark = pytest.mark.anyio

MINUTE = datetime(2026, 5, 4, 11, 3, tzinfo=UTC)
WINDOW = {"start": "2026-05-04T11:00:00Z", "end": "2026-05-04T12:00:00Z"}


async def create(client: httpx.AsyncClient, key: str, service_id: uuid.UUID) -> dict[str, Any]:
    r = await client.post(
        f"/api/v1/customer/services/{service_id}/subusers",
        json={"traffic_limit_bytes": 10_000},
        headers=bearer(key),
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def pk_of(platform: Platform, subuser_id: str) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        found = await uow.session.execute(
            select(ServiceSubuser.id).where(ServiceSubuser.subuser_id == uuid.UUID(subuser_id))
        )
        return int(found.scalar_one())


async def usage(client: httpx.AsyncClient, key: str, service_id: uuid.UUID, subuser_id: str | None) -> Any:
    params = dict(WINDOW, **({"subuser_id": subuser_id} if subuser_id else {}))
    r = await client.get(f"/api/v1/customer/services/{service_id}/usage", params=params, headers=bearer(key))
    assert r.status_code == 200, r.text
    body = r.json()
    return body["requests"], body["bytes_total"], body["errors"]


async def rows_of(platform: Platform, pk: int) -> int:
    async with platform.db.unit_of_work(write=False) as uow:
        n = 0
        for table in usage_tables():
            count = select(func.count()).select_from(table).where(table.c["subuser_pk"] == pk)
            n += int((await uow.session.execute(count)).scalar_one())
        return n


async def test_a_new_subuser_never_inherits_a_deleted_ones_usage(
    client: httpx.AsyncClient, platform: Platform, account: Account
) -> None:
    key = await account.key()
    svc = await make_service(platform, account)
    sid = svc.service_id
    old = await create(client, key, sid)
    old_pk = await pk_of(platform, old["subuser_id"])
    rows = [
        UsageRow(
            f"{sid}/{old_pk}",
            MINUTE,
            "a.example",
            3,
            1,
            100,
            400,
            {"timeout": 1},
            {("127.0.0.1", "timeout"): 1},
        ),
        UsageRow(f"{sid}/{old_pk}", MINUTE + timedelta(minutes=1), "b.example", 2, 1, 50, 50),
        UsageRow(str(sid), MINUTE, "c.example", 1, 1, 7, 3),  # the service's own login
    ]
    await write_usage(platform.db, rows)
    assert await usage(client, key, sid, old["subuser_id"]) == (5, 600, 1)
    service_before = await usage(client, key, sid, None)
    assert service_before == (6, 610, 1)  # the service's rows count its sub-users' traffic too
    assert await rows_of(platform, old_pk) > 0

    await _session(platform, str(sid), f"{old_pk}:abc", "127.0.0.1")  # as a gateway node writes it
    sticky = f"/api/v1/customer/services/{sid}/proxy/sticky/sessions"
    listed = (await client.get(sticky, headers=bearer(key))).json()["sessions"]
    assert [(s["sid"], s["subuser_id"]) for s in listed] == [("abc", old["subuser_id"])]
    r = await client.delete(
        f"/api/v1/customer/services/{sid}/subusers/{old['subuser_id']}", headers=bearer(key)
    )
    assert r.status_code == 204, r.text
    assert await rows_of(platform, old_pk) == 0  # deleted with the sub-user
    assert (await client.get(sticky, headers=bearer(key))).json()["sessions"] == []  # its sessions ended
    new = await create(client, key, sid)
    new_pk = await pk_of(platform, new["subuser_id"])
    assert new_pk > old_pk  # never reused (SQLite: AUTOINCREMENT)
    assert await usage(client, key, sid, new["subuser_id"]) == (0, 0, 0)
    got = await client.get(
        f"/api/v1/customer/services/{sid}/subusers/{new['subuser_id']}", headers=bearer(key)
    )
    assert got.status_code == 200 and got.json()["used_bytes"] == 0
    assert await usage(client, key, sid, None) == service_before  # the service's own rows unchanged

    # a node flushing the deleted sub-user's last minute after the delete: nothing reaches the new one
    await write_usage(platform.db, [UsageRow(f"{sid}/{old_pk}", MINUTE, "a.example", 1, 0, 9, 9)])
    assert await usage(client, key, sid, new["subuser_id"]) == (0, 0, 0)
    got = await client.get(
        f"/api/v1/customer/services/{sid}/subusers/{new['subuser_id']}", headers=bearer(key)
    )
    assert got.json()["used_bytes"] == 0
