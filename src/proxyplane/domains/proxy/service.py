"""Proxy access of a service: endpoints, credentials, whitelist, session mode and sticky sessions.

Every change here bumps `services.updated_at` in the same transaction (`touch`): that is the marker
the gateway nodes poll, so a change reaches every node within a second (docs/decisions/gateway.md).
Sticky sessions live in `sticky_sessions` (written by the gateway nodes); the API rotates and ends them by
writing rows with writer "api", which the nodes apply.
"""

from __future__ import annotations

import hashlib
import ipaddress
import random
import re
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.place_names import geo_key
from proxyplane.core.security import SecretBox
from proxyplane.domains.addons import service as addons
from proxyplane.domains.services import service as services
from proxyplane.domains.stock import subnets
from proxyplane.storage.models import Service, StockIp
from proxyplane.storage.models.gateway import PURGE_SID, SUPPLIER_MARK, ProxySettings, StickySession
from proxyplane.storage.models.prefixes import IPV6_KIND
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserWhitelist
from proxyplane.storage.repos import ip_geo, proxy_settings, sticky_sessions
from proxyplane.storage.repos import services as service_rows

API_WRITER = "api"
TTL_MINUTES = (1, 2, 3, 5, 10, 15)  # the legacy door's choices (and the dashboard's first ones)
TTL_MAX_MINUTES = 24 * 60  # v1/MCP and the username: any whole minute from 1 to 24 hours (issue 36)
LOGIN_RE = re.compile(r"^[a-z0-9_]{3,32}$")


def touch(svc: Service) -> None:
    """Bump the gateway's change marker (same transaction as the change)."""
    svc.updated_at = utcnow()


def is_rotating(svc: Service) -> bool:
    return svc.product_kind == "proxy_rotating"


def has_session_modes(svc: Service) -> bool:
    """Rotating services and IPv6 services (served from the rotating endpoint, issue 16)."""
    return svc.product_kind in ("proxy_rotating", IPV6_KIND)


def require_rotating(svc: Service) -> None:
    if not has_session_modes(svc):
        raise Conflict(
            f"service {svc.service_id} is a static ({svc.product_kind}) service; session modes "
            "and sticky sessions belong to rotating services"
        )


async def settings_row(session: AsyncSession, svc: Service) -> ProxySettings:
    row = await session.get(ProxySettings, svc.service_id)
    if row is None:
        row = await proxy_settings.add_settings(session, svc.service_id)
    return row


async def whitelist_limit(session: AsyncSession, svc: Service) -> int:
    """The one whitelist limit (included slots + extra slots add-ons): the add-ons domain's entitlements,
    the same figure the gateway gets."""
    return (await addons.entitlements(session, svc.service_id)).whitelist_limit


async def exit_pool(session: AsyncSession, svc: Service) -> dict[str, str]:
    """{exit IP: country} a rotating service leaves from (the unretired stock of its pool); none of ours
    for a service drawing from an upstream pool (issue 36.4: the supplier's exits)."""
    if (svc.parameters or {}).get("upstream_pool"):
        return {}
    pool = str((svc.parameters or {}).get("exit_pool", "proxy_datacenter"))
    col = StockIp.country_ripe if svc.geo_source == "ripe" else StockIp.country_maxmind
    rows = await session.execute(
        select(StockIp.address, col).where(StockIp.product_kind == pool, StockIp.retired_at.is_(None))
    )
    return dict(rows.tuples().all())


async def pool_cities(session: AsyncSession, svc: Service) -> dict[str, list[str]]:
    """{country (lower case): sorted -city- values} of a rotating service's pool (issue 36)."""
    pool = str((svc.parameters or {}).get("exit_pool", "proxy_datacenter"))
    out: dict[str, set[str]] = {}
    rows = await ip_geo.city_counts(session, pool, svc.geo_source, free_only=False)
    for country, _region, city, _n in rows:
        if city:
            out.setdefault(country.lower(), set()).add(geo_key(city))
    return {c: sorted(names) for c, names in sorted(out.items())}


async def _subuser_login(session: AsyncSession, login: str) -> bool:
    """A sub-user has this login (logins are unique across services and sub-users: issue 18)."""
    found = await session.execute(select(ServiceSubuser.id).where(ServiceSubuser.login == login))
    return found.first() is not None


async def subuser_whitelist_entries(session: AsyncSession, svc: Service) -> int:
    """Whitelist entries of the service's sub-users: they use the service's slots (issue 18)."""
    q = (
        select(func.count())
        .select_from(SubuserWhitelist)
        .join(ServiceSubuser, ServiceSubuser.id == SubuserWhitelist.subuser_pk)
        .where(ServiceSubuser.service_id == svc.service_id)
    )
    return int((await session.execute(q)).scalar_one())


# --- credentials ----------------------------------------------------------------------------------


async def change_credentials(
    session: AsyncSession,
    box: SecretBox,
    svc: Service,
    *,
    rotate: bool,
    rotation_key: str | None,
    login: str | None,
) -> bool:
    """Returns whether the password was rotated by this call. A rotation key already used for the last
    rotation does not rotate again (an identical repeat leaves the same state)."""
    changed = rotated = False
    if login is not None and login != svc.login:
        if not LOGIN_RE.fullmatch(login):
            raise ValidationFailed(
                "login must be 3-32 characters of a-z, 0-9 and _ ('-' separates username options)",
                field="login",
            )
        other = await services.get_by_login(session, login)
        if other is not None or await _subuser_login(session, login):
            raise Conflict(f"login {login!r} is taken")
        svc.login = login
        changed = True
    if rotate:
        if not rotation_key:
            raise ValidationFailed(
                "rotation_key is required with rotate_password (a repeat with the same "
                "key does not rotate again)",
                field="rotation_key",
            )
        digest = hashlib.sha256(rotation_key.encode()).hexdigest()
        row = await settings_row(session, svc)
        if row.rotation_key_hash != digest:
            svc.password_enc = box.encrypt(services.new_password())
            row.rotation_key_hash = digest
            rotated = changed = True
    if changed:
        touch(svc)
        await session.flush()
    return rotated


# --- whitelist ------------------------------------------------------------------------------------


def parse_ipv4(value: str, field: str) -> str:
    value = value.strip()
    if "/" in value:
        raise ValidationFailed(
            f"{value!r} is a CIDR subnet; whitelist entries are single IPv4 addresses", field=field
        )
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        raise ValidationFailed(f"{value!r} is not an IPv4 address", field=field) from None
    if ip.version != 4:
        raise ValidationFailed(f"{value!r} is not an IPv4 address (IPv6 is not supported)", field=field)
    return str(ip)


async def whitelist_add(session: AsyncSession, svc: Service, ip: str) -> None:
    ip = parse_ipv4(ip, "ip")
    current = await services.whitelist(session, svc.service_id)
    if ip in current:
        return
    limit = await whitelist_limit(session, svc)
    if len(current) + await subuser_whitelist_entries(session, svc) >= limit:
        raise Conflict(
            f"the whitelist is full ({limit} entries, the service's and its sub-users' together); remove one "
            "or buy the extra whitelist slots add-on",
            limit=limit,
        )
    service_rows.add_whitelist_ip(session, svc.service_id, ip)
    touch(svc)
    await session.flush()


async def whitelist_remove(session: AsyncSession, svc: Service, ip: str) -> None:
    ip = parse_ipv4(ip, "ip_or_cidr")
    if await service_rows.remove_whitelist_ip(session, svc.service_id, ip):
        touch(svc)
        await session.flush()


# --- session mode ---------------------------------------------------------------------------------


async def set_mode(session: AsyncSession, svc: Service, mode: str, pin: str | None) -> ProxySettings:
    require_rotating(svc)
    row = await settings_row(session, svc)
    if mode == "pinned":
        if not pin:
            raise ValidationFailed(
                "pin (an exit IP of the service's pool) is required for pinned", field="pin"
            )
        if svc.product_kind == IPV6_KIND:  # an address inside one of the service's subnets
            held = [s.subnet for s in await subnets.live_subnets(session, svc.service_id)]
            pin = subnets.check_in_subnets(pin, held)
        elif pin not in await exit_pool(session, svc):
            raise ValidationFailed(f"{pin} is not an exit IP of this service", field="pin")
    elif pin is not None:
        raise ValidationFailed("pin is only allowed with mode pinned", field="pin")
    if (row.session_mode, row.pin) != (mode, pin):
        row.session_mode, row.pin = mode, pin
        touch(svc)
    await session.flush()
    return row


async def set_ttl(session: AsyncSession, svc: Service, minutes: int) -> ProxySettings:
    require_rotating(svc)
    if not 1 <= minutes <= TTL_MAX_MINUTES:
        raise ValidationFailed(f"ttl_minutes must be 1 to {TTL_MAX_MINUTES} (24 hours)", field="ttl_minutes")
    row = await settings_row(session, svc)
    if row.sticky_ttl_seconds != minutes * 60:
        row.sticky_ttl_seconds = minutes * 60
        touch(svc)
    await session.flush()
    return row


# --- sticky sessions ------------------------------------------------------------------------------
# A sub-user's sessions are rows of its service with sid "<sub-user pk>:<sid>" (issue 18: the gateway's
# sticky_sync writes them so); a plain sid never contains ":" (sids are [A-Za-z0-9_]).


def stored_sid(sid: str, subuser_pk: int | None) -> str:
    return sid if subuser_pk is None else f"{subuser_pk}:{sid}"


def split_sid(stored: str) -> tuple[int | None, str]:
    """(sub-user pk or None, sid) of a stored sid."""
    pk, colon, sid = stored.partition(":")
    return (int(pk), sid) if colon and pk.isdigit() else (None, stored)


async def live_sessions(
    session: AsyncSession,
    svc: Service,
    now: datetime | None = None,
    subuser_pk: int | None = None,
    every: bool = False,
) -> list[StickySession]:
    """Live sessions of the service itself (``subuser_pk`` None), of one sub-user, or, ``every``, of the
    service and all its sub-users."""
    now = now or utcnow()
    sid = StickySession.sid
    query = select(StickySession).where(
        StickySession.service_id == svc.service_id,
        sid != PURGE_SID,
        StickySession.ended.is_(False),
        StickySession.expires_at > now,
        ~StickySession.exit_ip.startswith(SUPPLIER_MARK),  # on an upstream supplier: no exit IP to show
    )
    if not every:
        query = query.where(
            ~sid.contains(":") if subuser_pk is None else sid.startswith(f"{subuser_pk}:"),
        )
    rows = await session.execute(query.order_by(StickySession.started_at))
    return list(rows.scalars())  # purge markers ("*", "<pk>:*") are ended rows


async def live_session(
    session: AsyncSession, svc: Service, sid: str, subuser_pk: int | None = None
) -> StickySession:
    row = await session.get(StickySession, (svc.service_id, stored_sid(sid, subuser_pk)))
    if row is None or row.ended or row.sid == PURGE_SID or row.expires_at <= utcnow() or \
            row.exit_ip.startswith(SUPPLIER_MARK):
        whose = "" if subuser_pk is None else " of this sub-user"
        raise NotFound(f"no live sticky session {sid!r}{whose} on service {svc.service_id}")
    return row


async def _subnet_exits(session: AsyncSession, svc: Service) -> dict[str, str]:
    """An IPv6 service's exits to rotate to: a random address of each of its live subnets (issue 16)."""
    rng = random.SystemRandom()
    live = await subnets.live_subnets(session, svc.service_id)
    return {subnets.random_address(s.subnet, rng): s.country for s in live}


async def rotate_session(
    session: AsyncSession,
    svc: Service,
    sid: str,
    subuser_pk: int | None = None,
    countries: list[str] | None = None,
) -> StickySession:
    """A new exit IP (different when the pool allows; within ``countries``, a sub-user's allowed ones,
    when given) and a fresh TTL window of the same length."""
    require_rotating(svc)
    row = await live_session(session, svc, sid, subuser_pk)
    exits = (
        await exit_pool(session, svc) if svc.product_kind != IPV6_KIND else await _subnet_exits(session, svc)
    )
    if countries:
        allowed = {c.upper() for c in countries}
        exits = {ip: c for ip, c in exits.items() if (c or "").upper() in allowed}
    pool = sorted(exits)
    others = [ip for ip in pool if ip != row.exit_ip] or pool
    if not others:
        raise Conflict("the service's exit pool is empty")
    now = utcnow()
    ttl = row.expires_at - row.started_at
    row.exit_ip = random.SystemRandom().choice(others)
    row.started_at, row.expires_at = now, now + ttl
    row.writer, row.updated_at = API_WRITER, now
    await session.flush()
    return row


async def end_session(session: AsyncSession, svc: Service, sid: str, subuser_pk: int | None = None) -> None:
    require_rotating(svc)
    row = await live_session(session, svc, sid, subuser_pk)
    row.ended, row.writer, row.updated_at = True, API_WRITER, utcnow()
    await session.flush()


async def purge_sessions(session: AsyncSession, svc: Service, subuser_pk: int | None = None) -> int:
    """End every session of the service and its sub-users (``subuser_pk`` None) or of one sub-user; a
    purge marker ("*", or "<pk>:*") also ends those a node created but has not written yet."""
    require_rotating(svc)
    now = utcnow()
    whole = subuser_pk is None
    ended = len(await live_sessions(session, svc, now, subuser_pk, every=whole))
    prefix = None if whole else f"{subuser_pk}:"
    await sticky_sessions.end_sessions(session, svc.service_id, prefix, API_WRITER, now)
    marker_sid = stored_sid(PURGE_SID, subuser_pk)
    await sticky_sessions.put_purge_marker(session, svc.service_id, marker_sid, API_WRITER, now)
    return ended
