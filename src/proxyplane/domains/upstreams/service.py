"""Upstream pools (issue 36.4): the operator's proxy suppliers, their health checks and the margin report.

A pool is a name (``resi``) that a rotating product's config names as ``upstream_pool``; its upstreams are
tried in position order by the gateway (gateway/upstream_pools.py). Passwords are sealed with the server's
SecretBox at registration and never returned: listings say ``has_password``. Templates are parsed at
registration (core/proxy_chain.py): an unknown field is a 422 naming it.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.proxy_chain import Hop, HopFailed, TemplateError, open_through, parse_template
from proxyplane.core.security import SecretBox
from proxyplane.storage.models.upstreams import SCHEMES, Upstream
from proxyplane.storage.repos import upstreams as repo

POOL_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
NOT_SALES = ("deposit", "adjustment")  # as the operator overview (domains/operators/reports.py)
CHECK_TIMEOUT = 5.0
GB = 1_000_000_000  # decimal, as sold (core/units.py)


def check_pool(pool: str) -> str:
    if not POOL_RE.fullmatch(pool):
        message = "pool: 1-40 lowercase letters, digits, _ or -, starting with a letter or digit"
        raise ValidationFailed(message, field="pool")
    return pool


def check_template(template: str) -> str:
    try:
        parse_template(template)
    except TemplateError as exc:
        raise ValidationFailed(str(exc), field="template", template_field=exc.field or None) from exc
    return template


def split_target(target: str) -> tuple[str, int]:
    host, sep, port = target.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValidationFailed("check_target must be host:port", field="check_target")
    return host, int(port)


def upstream_json(u: Upstream) -> dict[str, Any]:
    return {
        "upstream_id": str(u.upstream_id),
        "pool": u.pool,
        "position": u.position,
        "name": u.name,
        "scheme": u.scheme,
        "host": u.host,
        "port": u.port,
        "username": u.username,
        "has_password": bool(u.password_enc),
        "template": u.template,
        "cost_per_gb_cents": u.cost_per_gb_cents,
        "active": u.active,
        "check_target": u.check_target,
        "health": u.health,
        "checked_at": u.checked_at.isoformat() if u.checked_at else None,
        "check_error": u.check_error,
        "check_ms": u.check_ms,
    }


async def register(session: Any, box: SecretBox, *, pool: str, scheme: str, host: str, port: int,
                   username: str, password: str, template: str, cost_per_gb_cents: int,
                   position: int | None, name: str, check_target: str) -> Upstream:
    check_pool(pool)
    if scheme not in SCHEMES:
        raise ValidationFailed(f"scheme must be one of {', '.join(SCHEMES)}", field="scheme")
    check_template(template)
    split_target(check_target)
    if position is None:
        position = await repo.next_position(session, pool)
    elif await repo.position_taken(session, pool, position, None):
        raise Conflict(f"position {position} of pool {pool} is taken", field="position")
    return await repo.add(
        session, upstream_id=uuid.uuid4(), pool=pool, position=position, name=name, scheme=scheme,
        host=host, port=port, username=username, password_enc=box.encrypt(password) if password else "",
        template=template, cost_per_gb_cents=cost_per_gb_cents, active=True, check_target=check_target,
        health="unknown", check_error="", created_at=utcnow(),
    )


async def check_product_pool(session: Any, kind: str, pool: str) -> None:
    """A product may name a pool only if it is rotating and the pool has an active supplier."""
    if kind != "proxy_rotating":
        raise ValidationFailed("only a proxy_rotating product can draw from an upstream pool",
                               field="upstream_pool")
    if not any(u.active for u in await repo.listing(session, pool)):
        raise ValidationFailed(f"upstream pool {pool!r} has no active supplier", field="upstream_pool")


async def listing(session: Any, pool: str | None) -> list[Upstream]:
    return await repo.listing(session, pool)


async def get(session: Any, upstream_id: uuid.UUID) -> Upstream:
    u = await repo.get(session, upstream_id)
    if u is None:
        raise NotFound(f"upstream {upstream_id} not found")
    return u


async def change(session: Any, box: SecretBox, upstream_id: uuid.UUID, values: dict[str, Any]) -> Upstream:
    u = await get(session, upstream_id)
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if key == "template":
            check_template(value)
        elif key == "check_target":
            split_target(value)
        elif key == "position" and await repo.position_taken(session, u.pool, value, u.upstream_id):
            raise Conflict(f"position {value} of pool {u.pool} is taken", field="position")
        if key == "password":
            out["password_enc"] = box.encrypt(value) if value else ""
        else:
            out[key] = value
    if out:
        await repo.change(session, upstream_id, **out)
        await session.refresh(u)
    return u


class _Answer(asyncio.Protocol):
    """The check's side of the tunnel: done at the first byte the target answers (or the tunnel's end)."""

    def __init__(self) -> None:
        self.done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        if not self.done.done():
            self.done.set_result(True)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(False)


async def probe(box: SecretBox, u: Upstream, timeout: float = CHECK_TIMEOUT) -> tuple[str, str, int | None]:
    """(health, error, milliseconds): a tunnel through ``u`` to its check target and one HTTP request over
    it; up when the target's answer comes back (a supplier may accept a tunnel before it dials)."""
    host, port = split_target(u.check_target)
    password = box.decrypt(u.password_enc) if u.password_enc else ""
    user = parse_template(u.template).render({"user": u.username})
    hop = Hop(u.scheme, u.host, u.port, user, password)
    start = time.perf_counter()
    try:
        transport, answer = await open_through(hop, host, port, _Answer, timeout)
    except HopFailed as exc:
        return "down", f"{exc.reason}: {exc}"[:300], None
    try:
        transport.write(f"HEAD / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        left = max(0.1, timeout - (time.perf_counter() - start))
        answered = await asyncio.wait_for(answer.done, left)
    except TimeoutError:
        answered = False
    finally:
        transport.close()
    if not answered:
        return "down", f"no answer from {u.check_target} through the supplier", None
    return "up", "", int((time.perf_counter() - start) * 1000)


async def check(session: Any, box: SecretBox, upstream_id: uuid.UUID | None, pool: str | None
                ) -> list[Upstream]:
    """Health-check the named upstream, or every active one (of ``pool``), concurrently; results stored."""
    if upstream_id is not None:
        targets = [await get(session, upstream_id)]
    else:
        targets = [u for u in await repo.listing(session, pool) if u.active]
    results = await asyncio.gather(*(probe(box, u) for u in targets))
    now = utcnow()
    for u, (health, error, ms) in zip(targets, results, strict=True):
        await repo.change(session, u.upstream_id, health=health, check_error=error, check_ms=ms,
                          checked_at=now)
        await session.refresh(u)
    return targets


def cost_cents(nbytes: int, per_gb_cents: int) -> int:
    """What ``nbytes`` cost at ``per_gb_cents`` per decimal GB, rounded up to the cent (never under)."""
    return -(-nbytes * per_gb_cents // GB)


async def margin(session: Any, days: int, pool: str | None, now: datetime | None = None) -> dict[str, Any]:
    """Per pool, over the last ``days`` days (whole UTC hours): revenue (net sales of the services bought
    from products drawing from the pool) vs the upstream cost (bytes relayed through each upstream times
    its per-GB cost)."""
    now = now or utcnow()
    since = (now - timedelta(days=days)).replace(minute=0, second=0, microsecond=0)
    ups = await repo.listing(session, pool)
    usage = await repo.usage_since(session, since)
    services = {s: p for s, p in (await repo.pool_services(session)).items() if pool in (None, p)}
    sales = await repo.sales_by_service(session, services, since, NOT_SALES)
    pools: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return pools.setdefault(name, {"pool": name, "revenue_cents": 0, "cost_cents": 0, "bytes": 0,
                                       "services": 0, "upstreams": []})

    for u in ups:
        nbytes, tunnels, failures = usage.get(u.upstream_id, (0, 0, 0))
        cents = cost_cents(nbytes, u.cost_per_gb_cents)
        e = entry(u.pool)
        e["cost_cents"] += cents
        e["bytes"] += nbytes
        e["upstreams"].append({"upstream_id": str(u.upstream_id), "name": u.name, "position": u.position,
                               "bytes": nbytes, "tunnels": tunnels, "failures": failures,
                               "cost_per_gb_cents": u.cost_per_gb_cents, "cost_cents": cents})
    for service_id, name in services.items():
        e = entry(name)
        e["services"] += 1
        e["revenue_cents"] += sales.get(service_id, 0)
    for e in pools.values():
        e["margin_cents"] = e["revenue_cents"] - e["cost_cents"]
    return {"since": since.isoformat(), "until": now.isoformat(), "pools": sorted(pools.values(),
                                                                                  key=lambda e: e["pool"])}
