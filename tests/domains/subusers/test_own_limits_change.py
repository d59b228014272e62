"""A sub-user's own anti-sharing and speed limits (issue 32.5/32.6, migration 0041) are watched columns:
changing one logs a gateway change of its service (every node reloads it), on both engines; an update
that leaves them as they were logs nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from proxyplane.platform import Platform
from proxyplane.storage.models.subusers import ServiceSubuser
from tests.domains.subusers.support import service_with_subusers
from tests.domains.subusers.test_metering import change_seq

pytestmark = pytest.mark.anyio


async def set_columns(platform: Platform, pk: int, **values: object) -> None:
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(update(ServiceSubuser).where(ServiceSubuser.id == pk).values(**values))
        await uow.commit()


@pytest.mark.parametrize(
    "values",
    [{"speed_limit_bps": 1_000_000}, {"max_client_ips": 2}, {"client_ip_policy": "newest_wins"}],
    ids=["speed", "max_ips", "policy"],
)
async def test_own_limits_log_a_gateway_change(platform: Platform, values: dict[str, object]) -> None:
    _customer, sid, (pk,) = await service_with_subusers(platform, [None])
    before = await change_seq(platform, sid)
    await set_columns(platform, pk, **values)
    after = await change_seq(platform, sid)
    assert before is not None and after is not None and after > before
    await set_columns(platform, pk, **values)  # the same values again: no change to serve
    assert await change_seq(platform, sid) == after
