"""IPv6 prefixes (issue 16): a prefix is one row, subnets are handed out from its cursor, a released subnet
is reused before the cursor advances, never two live services on one subnet, the change log names the
service."""

from __future__ import annotations

import ipaddress
import uuid

import pytest
from sqlalchemy import delete, func, select

from proxyplane.domains.stock import subnets
from proxyplane.platform import Platform
from proxyplane.storage.models import Service
from proxyplane.storage.models.gateway_changes import GatewayChange
from proxyplane.storage.models.prefixes import ServiceSubnet
from tests.domains.stock.subnet_support import fresh_prefix, retire_country
from tests.support import Account

pytestmark = pytest.mark.anyio


def test_subnet_arithmetic() -> None:
    assert subnets.subnet_count("2001:db8::/48", 64) == 65_536
    assert subnets.subnet_at("2001:db8::/48", 64, 5) == "2001:db8:0:5::/64"
    assert subnets.subnet_at("2001:db8::/48", 56, 1) == "2001:db8:0:100::/56"
    assert str(subnets.parse_prefix(" 2001:DB8::/48 ", 64)) == "2001:db8::/48"
    for bad, size in (
        ("2001:db8::1/48", 64),
        ("2001:db8::/80", 96),
        ("2001:db8::/48", 48),
        ("10.0.0.0/8", 64),
    ):
        with pytest.raises(ValueError):
            subnets.parse_prefix(bad, size)
    inside = subnets.check_in_subnets("2001:db8:0:5::abcd", ["2001:db8:0:5::/64"])
    assert inside == "2001:db8:0:5::abcd"


async def _service(platform: Platform, account: Account) -> uuid.UUID:
    async with platform.db.unit_of_work() as uow:
        svc = Service(
            service_id=uuid.uuid4(),
            customer_id=account.customer_id,
            product_kind="proxy_ipv6",
            status="active",
            login=f"v6{uuid.uuid4().hex[:12]}",
            password_enc="x",
        )
        uow.session.add(svc)
        await uow.commit()
        return svc.service_id


async def test_allocate_release_reuse(platform: Platform, account: Account) -> None:
    prefix = await fresh_prefix(platform, "PT", length=62)  # 4 subnets: exhaustion is reachable
    first, second = await _service(platform, account), await _service(platform, account)
    async with platform.db.unit_of_work() as uow:
        assert await subnets.availability(uow.session, "maxmind", ["PT"]) == {"PT": 4}
        seq_before = await uow.session.scalar(select(func.max(GatewayChange.seq)))
        got = await subnets.take(uow.session, first, "maxmind", [("PT", 3)])
        await uow.commit()
    assert [a.address for a in got] == [subnets.subnet_at(prefix, 64, i) for i in range(3)]
    assert all(ipaddress.IPv6Network(a.address).subnet_of(ipaddress.IPv6Network(prefix)) for a in got)
    async with platform.db.unit_of_work() as uow:
        change = await uow.session.get(GatewayChange, first.hex if platform.db.is_sqlite else str(first))
        assert change is not None and change.seq > (seq_before or 0)  # the trigger logged the service
        assert await subnets.availability(uow.session, "maxmind", ["PT"]) == {"PT": 1}
        # 2 wanted, 1 left: a short answer, the caller decides
        short = await subnets.take(uow.session, second, "maxmind", [("PT", 2)])
        assert [a.address for a in short] == [subnets.subnet_at(prefix, 64, 3)]
        assert await subnets.release(uow.session, first, {got[1].address}) == 1
        row = next(p for p in await subnets.list_prefixes(uow.session) if p.prefix == prefix)
        assert (row.subnets, row.used, row.free) == (4, 3, 1)
        reused = await subnets.take(uow.session, second, "maxmind", [("PT", 1)])
        assert [a.address for a in reused] == [got[1].address]  # released first, cursor unchanged
        assert await subnets.availability(uow.session, "maxmind", ["PT"]) == {}
        live = await uow.session.scalar(
            select(func.count()).where(
                ServiceSubnet.subnet == got[1].address, ServiceSubnet.released_at.is_(None)
            )
        )
        assert live == 1
        await uow.commit()


async def test_deleted_service_subnets_are_sold_again(platform: Platform, account: Account) -> None:
    """A service row deleted outright takes its subnet rows with it (ON DELETE CASCADE): those subnets are
    free again and handed out once released ones and the cursor are used up."""
    prefix = await fresh_prefix(platform, "RO", length=62)  # 4 /64s
    first = await _service(platform, account)
    async with platform.db.unit_of_work() as uow:
        got = await subnets.take(
            uow.session,
            first,
            "maxmind",
            [("RO", 3)],
        )
        await uow.commit()
    assert len(got) == 3
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(delete(Service).where(Service.service_id == first))
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        assert (await subnets.availability(uow.session, "maxmind", ["RO"])) == {"RO": 4}
        row = next(p for p in await subnets.list_prefixes(uow.session) if p.prefix == prefix)
        assert (row.used, row.free) == (0, 4)
    second = await _service(platform, account)
    async with platform.db.unit_of_work() as uow:
        again = await subnets.take(
            uow.session,
            second,
            "maxmind",
            [("RO", 4)],
        )
        await uow.commit()
    assert sorted(a.address for a in again) == sorted(
        str(s) for s in ipaddress.IPv6Network(prefix).subnets(new_prefix=64)
    )
    await retire_country(platform, "RO")
