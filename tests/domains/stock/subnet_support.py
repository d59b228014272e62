"""Test helpers for IPv6 stock: a fresh routed prefix (a random /48 of 2001:db8::/32, the documentation
prefix) as the only proxy_ipv6 stock of one country."""

from __future__ import annotations

import random

from sqlalchemy import or_, update

from proxyplane.core.clock import utcnow
from proxyplane.domains.stock import subnets
from proxyplane.platform import Platform
from proxyplane.storage.models.prefixes import StockPrefix


def random_prefix(length: int = 48) -> str:
    """A random /length inside 2001:db8::/32 (length 33..64)."""
    bits = random.getrandbits(length - 32)
    base = (0x20010DB8 << 96) | (bits << (128 - length))
    import ipaddress

    return str(ipaddress.IPv6Network((base, length)))


async def fresh_prefix(
    platform: Platform, country: str, *, length: int = 48, subnet_len: int = 64, ripe: str | None = None
) -> str:
    """Retire every live proxy_ipv6 prefix in `country` (either geo source), then add a new one."""
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockPrefix)
            .where(
                StockPrefix.retired_at.is_(None),
                or_(StockPrefix.country_maxmind == country, StockPrefix.country_ripe == country),
            )
            .values(retired_at=utcnow())
        )
        for _ in range(100):
            prefix = random_prefix(length)
            try:
                row, added = await subnets.add_prefix(
                    uow.session, prefix, country, ripe or country, subnet_len
                )
            except ValueError as exc:  # overlaps one on sale: draw again
                if "overlaps" not in str(exc):
                    raise
                continue
            if added:
                break
        else:
            raise AssertionError("no free random prefix in 100 draws")
        await uow.commit()
    return row.prefix


async def retire_country(platform: Platform, country: str) -> None:
    """Take a test's prefixes off sale (auto-plan tests split over every country with free subnets)."""
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(StockPrefix)
            .where(StockPrefix.retired_at.is_(None), StockPrefix.country_maxmind == country)
            .values(retired_at=utcnow())
        )
        await uow.commit()
