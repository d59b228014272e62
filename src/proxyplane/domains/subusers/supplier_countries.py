"""A sub-user's countries on a service that draws from an upstream pool (issue 36): checked against what
the pool can be asked for, not against our stock (the supplier's exits are not ours). A supplier is asked
for a country through its username template's ``{country}``: the countries must be ISO 3166-1 codes, and
every active supplier of the pool must carry ``{country}``, or a sub-user held to some countries could
leave from any country through the one that cannot be told."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import ValidationFailed
from proxyplane.core.proxy_chain import TemplateError, parse_template
from proxyplane.domains.stock.countries import COUNTRIES
from proxyplane.storage.repos import upstreams


def _names_country(template: str) -> bool:
    try:
        return "country" in parse_template(template).fields
    except TemplateError:  # refused at registration; an old row that does not parse cannot be told either
        return False


async def check(session: AsyncSession, pool: str, countries: list[str]) -> None:
    """422 (field ``countries``) naming the codes that are no country, or the pool's active suppliers whose
    template cannot carry a country."""
    unknown = [c for c in countries if c not in COUNTRIES]
    if unknown:
        raise ValidationFailed(
            f"{'countries' if len(unknown) > 1 else 'country'} {', '.join(unknown)}: not ISO 3166-1 "
            f"countries this service's upstream pool can be asked for",
            field="countries",
            unknown_countries=unknown,
        )
    blind = [u for u in await upstreams.listing(session, pool) if u.active and not _names_country(u.template)]
    if blind:
        names = ", ".join(u.name or str(u.upstream_id) for u in blind)
        raise ValidationFailed(
            f"this service's upstream pool {pool!r} cannot hold a sub-user to countries: the username "
            f"template of {'suppliers' if len(blind) > 1 else 'supplier'} {names} has no {{country}}",
            field="countries",
            unknown_countries=[],
            suppliers_without_country=[str(u.upstream_id) for u in blind],
        )
