"""Sticky-session sync through the store: an API rotation wins over every node's older version, also when
a node flushes a stale version after the rotation or pulls a rival node's version with it (the race behind
a once-flaky test_rotating_sticky_sessions_across_nodes)."""

from __future__ import annotations

import time
import uuid

import pytest

from proxyplane.core.clock import utcnow
from proxyplane.gateway.sticky_sync import SharedRouter, StickySync
from proxyplane.platform import Platform
from proxyplane.storage.models.gateway import StickySession as StickyRow

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_api_rotation_is_not_undone_by_older_node_versions(platform: Platform) -> None:
    db, service, sid = platform.db, str(uuid.uuid4()), "abc"
    a, b = SharedRouter(), SharedRouter()
    sync_a, sync_b = StickySync(db, a, "node-a-test"), StickySync(db, b, "node-b-test")
    now = time.time()
    # both nodes hold a version of the sid; b's started first, so it wins between the nodes
    a.adopt(service, sid, "127.0.1.1", now - 5, now + 600, False)
    b.adopt(service, sid, "127.0.1.2", now - 10, now + 600, False)
    a.dirty.add((service, sid))
    b.dirty.add((service, sid))
    await sync_b.flush()
    await sync_a.pull()  # a sees b's older version: a adopts it
    assert a.session(service, sid).exit_ip == "127.0.1.2"  # type: ignore[union-attr]
    a.adopt(service, sid, "127.0.1.1", now - 5, now + 600, False)  # a's stale version again, unsent
    a.dirty.add((service, sid))
    # the API rotates the session
    async with db.unit_of_work() as uow:
        row = await uow.session.get(StickyRow, (uuid.UUID(service), sid))
        assert row is not None
        t = utcnow()
        row.exit_ip, row.started_at, row.writer, row.updated_at = "127.0.1.3", t, "api", t
        await uow.commit()
    # a flushes its stale version after the rotation: the API's row stands
    await sync_a.flush()
    async with db.unit_of_work(write=False) as uow:
        row = await uow.session.get(StickyRow, (uuid.UUID(service), sid))
        assert row is not None and (row.writer, row.exit_ip) == ("api", "127.0.1.3")
    # b flushes its (older) version too, then everybody pulls and syncs a few rounds: the rotation holds
    b.dirty.add((service, sid))
    await sync_b.flush()
    for _ in range(3):
        await sync_a.sync()
        await sync_b.sync()
    for router in (a, b):
        session = router.session(service, sid)
        assert session is not None and session.exit_ip == "127.0.1.3"
    assert not a.dirty and not b.dirty


async def test_subuser_sessions_go_through_the_store_and_bad_ids_are_counted(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    """A sub-user's session (router id "<service>/<pk>") is stored under its service as "<pk>:<sid>" and
    comes back under the same router id on another node; an id of neither shape is counted and logged."""
    from proxyplane.gateway import metrics

    db, service = platform.db, str(uuid.uuid4())
    a, b = SharedRouter(), SharedRouter()
    sync_a, sync_b = StickySync(db, a, "node-a-sub"), StickySync(db, b, "node-b-sub")
    now = time.time()
    for owner in (f"{service}/42", "not-a-service", f"{service}/x"):
        a.adopt(owner, "abc", "127.0.1.4", now, now + 600, False)
        a.dirty.add((owner, "abc"))
    skipped = metrics.STICKY_SKIPPED._value.get()
    with caplog.at_level("WARNING", logger="proxyplane.gateway.sticky_sync"):
        assert await sync_a.flush() == 1
    assert metrics.STICKY_SKIPPED._value.get() == skipped + 2
    assert "2 sticky session(s) not written to the store" in caplog.text
    async with db.unit_of_work(write=False) as uow:
        row = await uow.session.get(StickyRow, (uuid.UUID(service), "42:abc"))
        assert row is not None and row.exit_ip == "127.0.1.4"
    await sync_b.pull()
    got = b.session(f"{service}/42", "abc")
    assert got is not None and got.exit_ip == "127.0.1.4" and b.session(service, "abc") is None
