"""The change log's triggers (migrations 0012c, 0022p). Stock pools: an UPDATE of stock_ips logs the pool
of every row whose pool columns changed (and the old pool of a row that moved), also after a rolled-back
savepoint; an UPDATE of assigned_count alone logs nothing. Services: every statement touching a service
logs it, in each transaction anew, also right after another service's change and after a rolled-back
savepoint (PostgreSQL skips the upsert for the service the transaction stamped last)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import String, cast, delete, insert, select, text, update

from proxyplane.core.clock import utcnow
from proxyplane.platform import Platform
from proxyplane.storage.models import Service, ServiceWhitelist, StockIp
from proxyplane.storage.models.gateway_changes import GatewayChange
from tests.domains.stock.support import unique_loopback
from tests.gateway.test_store_changes import generated

pytestmark = pytest.mark.anyio
POOLS = ("proxy_isp", "proxy_datacenter")
SEQ = text("SELECT key, seq FROM gateway_changes WHERE key IN ('pool:proxy_isp', 'pool:proxy_datacenter')")


async def _seqs(session) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {k.removeprefix("pool:"): int(s) for k, s in (await session.execute(SEQ)).all()}


async def _add(platform: Platform, per_pool: int) -> dict[str, list[str]]:
    added = {pool: [unique_loopback() for _ in range(per_pool)] for pool in POOLS}
    async with platform.db.unit_of_work() as uow:
        for pool, addresses in added.items():
            for address in addresses:
                uow.session.add(
                    StockIp(address=address, product_kind=pool, country_maxmind="LU", country_ripe="LU")
                )
        await uow.commit()
    return added


async def test_pool_updates_are_logged_per_pool(platform: Platform) -> None:
    added = await _add(platform, 3)
    mine = [a for addresses in added.values() for a in addresses]
    async with platform.db.unit_of_work() as uow:
        before = await _seqs(uow.session)
        # assigned_count alone: no pool changed
        await uow.session.execute(
            update(StockIp).where(StockIp.address.in_(mine)).values(assigned_count=StockIp.assigned_count)
        )
        await uow.session.execute(
            update(StockIp).where(StockIp.address.in_(mine)).values(assigned_count=StockIp.assigned_count + 1)
        )
        assert await _seqs(uow.session) == before
        # a retirement of IPs of both pools in one statement logs both
        await uow.session.execute(
            update(StockIp).where(StockIp.address.in_(mine)).values(retired_at=utcnow())
        )
        retired = await _seqs(uow.session)
        assert all(retired[pool] > before.get(pool, 0) for pool in POOLS)
        await uow.commit()
    async with platform.db.unit_of_work() as uow:
        # an IP moved from one pool to the other (in a later transaction) logs both pools again
        await uow.session.execute(
            update(StockIp)
            .where(StockIp.address == added["proxy_isp"][0])
            .values(product_kind="proxy_datacenter")
        )
        moved = await _seqs(uow.session)
        assert all(moved[pool] > retired[pool] for pool in POOLS)
        await uow.commit()


async def test_a_rolled_back_savepoint_does_not_hide_a_later_change(platform: Platform) -> None:
    added = await _add(platform, 1)
    address = added["proxy_isp"][0]
    async with platform.db.unit_of_work() as uow:
        before = (await _seqs(uow.session)).get("proxy_isp", 0)
        async with uow.session.begin_nested() as savepoint:
            await uow.session.execute(
                update(StockIp).where(StockIp.address == address).values(country_maxmind="CH")
            )
            assert (await _seqs(uow.session))["proxy_isp"] > before
            await savepoint.rollback()
        assert (await _seqs(uow.session)).get("proxy_isp", 0) == before  # the stamp went with it
        await uow.session.execute(
            update(StockIp).where(StockIp.address == address).values(retired_at=utcnow())
        )
        assert (await _seqs(uow.session))["proxy_isp"] > before  # stamped again, not taken as done
        await uow.commit()


async def _service_seqs(session, ids: list[uuid.UUID]) -> list[int]:  # type: ignore[no-untyped-def]
    """Each service's seq in the log (0: none); its key is the id as the database stores it as text."""
    rows = await session.execute(
        select(Service.service_id, GatewayChange.seq)
        .outerjoin(GatewayChange, GatewayChange.key == cast(Service.service_id, String))
        .where(Service.service_id.in_(ids))
    )
    found = {sid: seq or 0 for sid, seq in rows.all()}
    return [int(found[i]) for i in ids]


async def test_every_service_statement_is_logged(platform: Platform) -> None:
    a, b = await generated(platform, 2, 2)
    ip = 0

    async def whitelist(service: uuid.UUID) -> None:
        nonlocal ip
        ip += 1
        await uow.session.execute(insert(ServiceWhitelist).values(service_id=service, ip=f"127.9.0.{ip}"))

    async with platform.db.unit_of_work() as uow:
        start = await _service_seqs(uow.session, [a, b])
        await whitelist(a)
        first = await _service_seqs(uow.session, [a, b])
        assert first[0] > start[0] and first[1] == start[1]
        await whitelist(b)  # another service: logged
        second = await _service_seqs(uow.session, [a, b])
        assert second[0] == first[0] and second[1] > start[1]
        await whitelist(a)  # PostgreSQL: already stamped by this transaction, its one seq is enough
        again = await _service_seqs(uow.session, [a, b])
        if platform.db.is_sqlite:  # row triggers, one writer: every change takes the next seq
            assert again[0] > second[0] and again[1] == second[1]
            second = again
        assert again == second
        await uow.commit()
    async with platform.db.unit_of_work() as uow:  # a new transaction stamps the same service again
        await whitelist(b)
        await uow.session.execute(delete(ServiceWhitelist).where(ServiceWhitelist.service_id == b))
        third = await _service_seqs(uow.session, [a, b])
        assert third[0] == second[0] and third[1] > second[1]
        async with uow.session.begin_nested() as savepoint:
            await uow.session.execute(
                update(Service).where(Service.service_id == a).values(max_connections=3)
            )
            assert (await _service_seqs(uow.session, [a]))[0] > third[0]
            await savepoint.rollback()
        assert await _service_seqs(uow.session, [a, b]) == third  # the stamp went with the savepoint
        await whitelist(a)
        assert (await _service_seqs(uow.session, [a]))[0] > third[0]  # stamped again, not taken as done
        await uow.commit()
