"""service_ips' references hold on both engines: foreign keys on SQLite, per-statement triggers on
PostgreSQL (migration 0024p). A row for a missing stock IP or service is refused, whoever writes it; a
referenced stock IP cannot be deleted or re-keyed; deleting a service (or its customer) deletes its rows;
an allocation through stock/allocate.take passes the check (one statement for many IPs)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock.allocate import take
from proxyplane.platform import Platform
from proxyplane.storage.models import Service, ServiceIp, StockIp
from tests.domains.stock.support import fresh_stock
from tests.support import make_account

pytestmark = pytest.mark.anyio
POOL = "proxy_isp"


async def _service(platform: Platform, customer_id: int) -> uuid.UUID:
    async with platform.db.unit_of_work() as uow:
        svc = Service(
            service_id=uuid.uuid4(),
            customer_id=customer_id,
            product_kind=POOL,
            status="active",
            login=f"ref{uuid.uuid4().hex[:12]}",
            password_enc="x",
        )
        uow.session.add(svc)
        await uow.commit()
        return svc.service_id


async def _fails(platform: Platform, statement: object) -> None:
    with pytest.raises(IntegrityError):
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(statement)  # type: ignore[call-overload]
            await uow.commit()


def _row(service_id: uuid.UUID, ip_id: int) -> dict[str, object]:
    return {
        "service_id": service_id,
        "ip_id": ip_id,
        "address": "127.0.0.1",
        "country": "LU",
        "allocated_at": utcnow(),
    }


async def test_references_are_enforced_on_both_engines(platform: Platform) -> None:
    account = await make_account(platform)
    await fresh_stock(platform, POOL, "LU", 3, capacity=2)
    sid = await _service(platform, account.customer_id)
    async with platform.db.unit_of_work() as uow:
        got = await take(uow.session, sid, POOL, "maxmind", [("LU", 3)])
        await uow.commit()
    assert len(got) == 3
    ids = [a.ip_id for a in got]
    async with platform.db.unit_of_work(write=False) as uow:
        top = int(await uow.session.scalar(select(func.max(StockIp.id))) or 0)
    table = ServiceIp.__table__
    # a row for a stock IP or a service that does not exist (the first of two rows is fine)
    await _fails(platform, insert(table).values([_row(sid, ids[0]), _row(sid, top + 1000)]))
    await _fails(platform, insert(table).values([_row(uuid.uuid4(), ids[0])]))
    await _fails(platform, update(table).where(ServiceIp.service_id == sid).values(ip_id=top + 1000))
    # a referenced stock IP can be neither deleted nor re-keyed
    await _fails(platform, delete(StockIp).where(StockIp.id.in_(ids[1:])))
    await _fails(platform, update(StockIp).where(StockIp.id == ids[0]).values(id=top + 1000))
    async with platform.db.unit_of_work(write=False) as uow:
        held = await uow.session.scalar(select(func.count()).where(ServiceIp.service_id == sid))
    assert held == 3
    # deleting the service deletes its rows; deleting a customer deletes its services' rows
    other = await _service(platform, account.customer_id)
    async with platform.db.unit_of_work() as uow:
        await take(uow.session, other, POOL, "maxmind", [("LU", 2)])
        await uow.session.execute(delete(Service).where(Service.service_id == sid))
        await uow.commit()
    async with platform.db.unit_of_work() as uow:
        left = await uow.session.execute(
            select(ServiceIp.service_id, func.count())
            .where(ServiceIp.service_id.in_([sid, other]))
            .group_by(ServiceIp.service_id)
        )
        assert dict(left.all()) == {other: 2}
        await uow.session.execute(text("DELETE FROM customers WHERE id = :id"), {"id": account.customer_id})
        await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        n = await uow.session.scalar(select(func.count()).where(ServiceIp.service_id.in_([sid, other])))
    assert n == 0
