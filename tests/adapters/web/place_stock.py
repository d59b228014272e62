"""Dedicated stock in two cities of two regions of one country, located by a test .mmdb (the buy page's
regions and cities, issue 36), and its removal."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import delete, insert, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.geo import service as geo
from proxyplane.domains.geo.reader import GeoReader
from proxyplane.platform import Platform
from proxyplane.storage.models import IpGeo, StockIp
from tests.domains.geo.mmdb import write

KIND = "proxy_personal"
COUNTRY = "DE"


@dataclass(frozen=True)
class Placed:
    tag: str
    alpha: frozenset[str]  # 6 IPs in city "Alpha <tag>", region "Bavaria <tag>"
    beta: frozenset[str]  # 4 IPs in city "Beta <tag>", region "Saxony <tag>"

    @property
    def addresses(self) -> list[str]:
        return sorted(self.alpha | self.beta)


async def add_placed_stock(platform: Platform, tmp: Path) -> Placed:
    tag = uuid.uuid4().hex[:6]
    base = f"127.{random.choice([*range(40, 200), *range(201, 250)])}.{random.randrange(0, 250)}"
    city, asn = write(tmp, [
        (f"{base}.0/29", COUNTRY, f"Bavaria {tag}", "BY", f"Alpha {tag}", 64496, "Example Net"),
        (f"{base}.8/29", COUNTRY, f"Saxony {tag}", "SN", f"Beta {tag}", 64497, "Other Net"),
    ])
    placed = Placed(tag, frozenset(f"{base}.{n}" for n in range(2, 8)),
                    frozenset(f"{base}.{n}" for n in range(8, 12)))
    async with platform.db.unit_of_work(write=True) as uow:
        for address in placed.addresses:
            await uow.session.execute(insert(StockIp).values(
                address=address, product_kind=KIND, country_maxmind=COUNTRY, country_ripe=COUNTRY,
                capacity=1, assigned_count=0))
        await geo.locate(uow.session, placed.addresses, {"maxmind": GeoReader(city, asn)})
        await uow.commit()
    return placed


async def remove_placed_stock(platform: Platform, placed: Placed) -> None:
    async with platform.db.unit_of_work(write=True) as uow:
        await uow.session.execute(delete(IpGeo).where(IpGeo.address.in_(placed.addresses)))
        await uow.session.execute(update(StockIp).where(StockIp.address.in_(placed.addresses))
                                  .values(retired_at=utcnow()))  # services may hold some
        await uow.commit()
