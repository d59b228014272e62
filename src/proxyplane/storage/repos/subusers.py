"""The writer of `service_subusers`, `subuser_whitelist` and (on a sub-user's removal) the gateway's usage
rows keyed by `subuser_pk`. Nothing here commits; settings of a loaded sub-user are the unit of work's
(domains/subusers/service.py)."""

from __future__ import annotations

from sqlalchemy import Table, delete
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models import Base
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserWhitelist
from proxyplane.storage.rowcount import rowcount


def usage_tables() -> list[Table]:
    """The tables of what the gateway metered per sub-user (minutes, errors and their rollups): keyed by
    ``subuser_pk`` without a foreign key (the whitelist's cascades with the sub-user)."""
    return [
        t for t in Base.metadata.sorted_tables if "subuser_pk" in t.c and not t.c["subuser_pk"].foreign_keys
    ]


async def add_subuser(session: AsyncSession, sub: ServiceSubuser) -> None:
    """A new sub-user, flushed (its id is known)."""
    session.add(sub)
    await session.flush()


async def remove(session: AsyncSession, sub: ServiceSubuser) -> None:
    """The sub-user, its usage rows and (by cascade) its whitelist, flushed."""
    for table in usage_tables():
        await session.execute(delete(table).where(table.c["subuser_pk"] == sub.id))
    await session.delete(sub)
    await session.flush()


async def add_whitelisted(session: AsyncSession, subuser_pk: int, ip: str) -> None:
    session.add(SubuserWhitelist(subuser_pk=subuser_pk, ip=ip))
    await session.flush()


async def remove_whitelisted(session: AsyncSession, subuser_pk: int, ip: str) -> bool:
    """False when the address was not on the sub-user's whitelist (nothing written)."""
    gone = await session.execute(
        delete(SubuserWhitelist).where(SubuserWhitelist.subuser_pk == subuser_pk, SubuserWhitelist.ip == ip)
    )
    return bool(rowcount(gone))
