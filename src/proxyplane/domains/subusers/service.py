"""Sub-users of a service: lookups, create, update, delete, password rotation, whitelist.

Every write here changes service_subusers / subuser_whitelist, whose triggers (migration 0018b) log a
change of the owning service for the gateway nodes; callers also bump the service's change marker
(`proxy.touch`) like every other change of what a service grants.

Rules (docs/decisions/subusers.md "Sub-users (issue 18)"):
- a login is unique among service logins AND sub-user logins (checked both ways: here, and in
  domains/proxy change_credentials for a service's login change); generated service logins look like
  pp + 10 hex digits, which a sub-user login may not, so a later generated service login cannot collide;
- max_connections <= the service's; countries only on rotating services, each in the service's exit pool
  (422 naming the others); traffic limits in the plan's
  unit on rotating services (bandwidth -> bytes, requests -> requests), either on static ones;
- a sub-user's whitelist entries count against the service's whitelist slots with the service's own.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.security import SecretBox
from proxyplane.domains.proxy import service as proxy
from proxyplane.domains.services import service as services
from proxyplane.domains.subusers import supplier_countries
from proxyplane.storage.models import Service, ServiceWhitelist, StockIp
from proxyplane.storage.models.subusers import ServiceSubuser, SubuserWhitelist
from proxyplane.storage.repos import subusers as subuser_rows
from proxyplane.storage.repos.subusers import usage_tables as usage_tables  # importable from here

MAX_PER_SERVICE = 100
GENERATED_SERVICE_LOGIN = re.compile(r"^pp[0-9a-f]{10}$")
COUNTRY = re.compile(r"^[A-Za-z]{2}$")


def new_login() -> str:
    return "su" + uuid.uuid4().hex[:10]


def level(sub: ServiceSubuser) -> int:
    """0, 80 or 100: the usage level against the tighter limit (storage/repos/subuser_usage.level_expr in
    Python)."""
    pairs = ((sub.used_bytes, sub.traffic_limit_bytes), (sub.used_requests, sub.traffic_limit_requests))
    if any(limit is not None and used >= limit for used, limit in pairs):
        return 100
    if any(limit is not None and used * 5 >= limit * 4 for used, limit in pairs):
        return 80
    return 0


async def login_taken(session: AsyncSession, login: str) -> bool:
    """Whether a service or a sub-user has this login."""
    if await services.get_by_login(session, login) is not None:
        return True
    found = await session.execute(select(ServiceSubuser.id).where(ServiceSubuser.login == login))
    return found.first() is not None


async def check_login(session: AsyncSession, login: str) -> str:
    if not proxy.LOGIN_RE.fullmatch(login):
        raise ValidationFailed(
            "login must be 3-32 characters of a-z, 0-9 and _ ('-' separates username options)", field="login"
        )
    if GENERATED_SERVICE_LOGIN.fullmatch(login):
        raise ValidationFailed(
            "logins of the form pp + 10 hex digits are reserved for services; choose another", field="login"
        )
    if await login_taken(session, login):
        raise Conflict(f"login {login!r} is taken")
    return login


async def get_owned(session: AsyncSession, svc: Service, subuser_id: uuid.UUID) -> ServiceSubuser:
    sub = (
        await session.execute(
            select(ServiceSubuser).where(
                ServiceSubuser.subuser_id == subuser_id, ServiceSubuser.service_id == svc.service_id
            )
        )
    ).scalar_one_or_none()
    if sub is None:
        raise NotFound(f"sub-user {subuser_id} not found")
    return sub


async def list_for_service(session: AsyncSession, service_id: uuid.UUID) -> list[ServiceSubuser]:
    rows = await session.execute(
        select(ServiceSubuser).where(ServiceSubuser.service_id == service_id).order_by(ServiceSubuser.id)
    )
    return list(rows.scalars().all())


async def whitelists(session: AsyncSession, pks: Sequence[int]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {pk: [] for pk in pks}
    if pks:
        rows = await session.execute(
            select(SubuserWhitelist.subuser_pk, SubuserWhitelist.ip)
            .where(SubuserWhitelist.subuser_pk.in_(pks))
            .order_by(SubuserWhitelist.id)
        )
        for pk, ip in rows.tuples().all():
            out[pk].append(ip)
    return out


def _plan(svc: Service) -> str | None:
    """'bandwidth' or 'requests' for a rotating service with a plan, None otherwise (either unit)."""
    plan = (svc.parameters or {}).get("plan") if proxy.is_rotating(svc) else None
    return plan if plan in ("bandwidth", "requests") else None


def check_limits(svc: Service, changes: dict[str, Any]) -> None:
    """Validate the limit fields present in `changes` against the service (raises 422/409)."""
    for name in ("traffic_limit_bytes", "traffic_limit_requests", "max_connections"):
        value = changes.get(name)
        if value is not None and value < 1:
            raise ValidationFailed(f"{name} must be at least 1 (null: no limit)", field=name)
    plan = _plan(svc)
    if plan == "bandwidth" and changes.get("traffic_limit_requests") is not None:
        raise ValidationFailed(
            "this service's plan is metered in bytes: set traffic_limit_bytes", field="traffic_limit_requests"
        )
    if plan == "requests" and changes.get("traffic_limit_bytes") is not None:
        raise ValidationFailed(
            "this service's plan is metered in requests: set traffic_limit_requests",
            field="traffic_limit_bytes",
        )
    conns = changes.get("max_connections")
    if conns is not None and conns > svc.max_connections:
        raise ValidationFailed(
            f"max_connections {conns} is above the service's {svc.max_connections}", field="max_connections"
        )
    if changes.get("countries") and not proxy.is_rotating(svc):
        raise Conflict(
            f"service {svc.service_id} is a static ({svc.product_kind}) service: countries belong to "
            "rotating services (a static service's exit IPs are fixed)"
        )


def clean_name(name: str | None) -> str | None:
    """A sub-user's label: surrounding blanks dropped; empty means none."""
    name = (name or "").strip()
    return name or None


def clean_countries(countries: list[str] | None) -> list[str] | None:
    if not countries:
        return None
    for c in countries:
        if not COUNTRY.fullmatch(c):
            raise ValidationFailed(f"{c!r} is not an ISO 3166-1 alpha-2 country code", field="countries")
    return sorted({c.upper() for c in countries})


def _settle(sub: ServiceSubuser) -> None:
    """After a limit or usage change: notified_pct and limit_reached follow the current level (raising a
    limit above the usage lets the sub-user through again; the events fire again on the next crossing)."""
    now = level(sub)
    sub.notified_pct = now
    sub.limit_reached = now == 100


async def pool_countries(session: AsyncSession, svc: Service) -> set[str]:
    """The countries (upper-case ISO alpha-2) of a rotating service's exit pool: its unretired stock, by
    the service's geo source (what the gateway routes -country-XX by)."""
    pool = str((svc.parameters or {}).get("exit_pool", "proxy_datacenter"))
    col = StockIp.country_ripe if svc.geo_source == "ripe" else StockIp.country_maxmind
    rows = await session.execute(
        select(func.upper(col)).where(StockIp.product_kind == pool, StockIp.retired_at.is_(None)).distinct()
    )
    return {c for c in rows.scalars() if c}


async def check_countries(session: AsyncSession, svc: Service, countries: list[str] | None) -> None:
    """422 naming the countries (already cleaned) outside the service's exit pool: a sub-user limited to
    them could never connect. Checked when the list is set (create/update), not when the pool changes."""
    if not countries or not proxy.is_rotating(svc):
        return  # any country; static services are refused by check_limits
    upstream_pool = (svc.parameters or {}).get("upstream_pool")
    if upstream_pool:  # the supplier's exits (issue 36): what the pool can be asked for
        return await supplier_countries.check(session, str(upstream_pool), countries)
    available = await pool_countries(session, svc)
    unknown = [c for c in countries if c not in available]
    if unknown:
        raise ValidationFailed(
            f"{'countries' if len(unknown) > 1 else 'country'} {', '.join(unknown)} not in this service's "
            f"exit pool (available: {', '.join(sorted(available)) or 'none'})",
            field="countries",
            unknown_countries=unknown,
        )


async def create(
    session: AsyncSession, box: SecretBox, svc: Service, login: str | None, fields: dict[str, Any]
) -> tuple[ServiceSubuser, str]:
    """(the sub-user, its password in clear: shown once)."""
    count = await session.execute(
        select(func.count()).select_from(ServiceSubuser).where(ServiceSubuser.service_id == svc.service_id)
    )
    if int(count.scalar_one()) >= MAX_PER_SERVICE:
        raise Conflict(f"a service has at most {MAX_PER_SERVICE} sub-users; delete one first")
    fields = dict(
        fields, countries=clean_countries(fields.get("countries")), name=clean_name(fields.get("name"))
    )
    check_limits(svc, fields)
    await check_countries(session, svc, fields["countries"])
    if login is None:
        login = new_login()
        while await login_taken(session, login):  # 40 random bits: practically never loops
            login = new_login()
    else:
        login = await check_login(session, login)
    password = services.new_password()
    sub = ServiceSubuser(
        service_id=svc.service_id,
        login=login,
        name=fields["name"],
        password_enc=box.encrypt(password),
        enabled=fields.get("enabled", True),
        traffic_limit_bytes=fields.get("traffic_limit_bytes"),
        traffic_limit_requests=fields.get("traffic_limit_requests"),
        max_connections=fields.get("max_connections"),
        countries=fields["countries"],
        max_client_ips=fields.get("max_client_ips"),
        client_ip_policy=fields.get("client_ip_policy"),
        speed_limit_bps=fields.get("speed_limit_bps"),
        used_bytes=0,
        used_requests=0,
        limit_reached=False,
        notified_pct=0,
    )
    proxy.touch(svc)
    await subuser_rows.add_subuser(session, sub)
    return sub, password


async def update(
    session: AsyncSession, svc: Service, sub: ServiceSubuser, changes: dict[str, Any], reset_usage: bool
) -> None:
    """Apply the present fields of `changes` (None clears a limit or the countries)."""
    if "countries" in changes:
        changes["countries"] = clean_countries(changes["countries"])
    if "name" in changes:
        changes["name"] = clean_name(changes["name"])
    check_limits(svc, changes)
    if "countries" in changes:
        await check_countries(session, svc, changes["countries"])
    if "login" in changes and changes["login"] != sub.login:
        sub.login = await check_login(session, changes.pop("login"))
    changes.pop("login", None)
    for name, value in changes.items():
        setattr(sub, name, value)
    if reset_usage:
        sub.used_bytes = sub.used_requests = 0
    _settle(sub)
    proxy.touch(svc)
    await session.flush()


async def rotate_password(session: AsyncSession, box: SecretBox, svc: Service, sub: ServiceSubuser) -> str:
    password = services.new_password()
    sub.password_enc = box.encrypt(password)
    proxy.touch(svc)
    await session.flush()
    return password


async def remove(session: AsyncSession, svc: Service, sub: ServiceSubuser) -> None:
    """Delete the sub-user, its usage rows and its sticky sessions (ended with a purge marker, which the
    nodes apply), in this transaction. The service's own usage rows (which counted the sub-user's traffic
    too) stay as they are. Ids are never reused (AUTOINCREMENT on SQLite, migration 0019b), so rows a node
    flushes after this for the deleted id stay apart from any new sub-user."""
    if proxy.has_session_modes(svc):
        await proxy.purge_sessions(session, svc, sub.id)
    proxy.touch(svc)
    await subuser_rows.remove(session, sub)


async def whitelist_add(session: AsyncSession, svc: Service, sub: ServiceSubuser, ip: str) -> None:
    ip = proxy.parse_ipv4(ip, "ip")
    mine = await whitelists(session, [sub.id])
    if ip in mine[sub.id]:
        return
    own = await session.execute(
        select(func.count())
        .select_from(ServiceWhitelist)
        .where(ServiceWhitelist.service_id == svc.service_id)
    )
    used = int(own.scalar_one()) + await proxy.subuser_whitelist_entries(session, svc)
    limit = await proxy.whitelist_limit(session, svc)
    if used >= limit:
        raise Conflict(
            f"the service's whitelist slots are full ({used} of {limit}, the service's entries and its "
            "sub-users' together); remove one or buy the extra whitelist slots add-on",
            limit=limit,
        )
    proxy.touch(svc)
    await subuser_rows.add_whitelisted(session, sub.id, ip)


async def whitelist_remove(session: AsyncSession, svc: Service, sub: ServiceSubuser, ip: str) -> None:
    ip = proxy.parse_ipv4(ip, "ip")
    if await subuser_rows.remove_whitelisted(session, sub.id, ip):
        proxy.touch(svc)
        await session.flush()
