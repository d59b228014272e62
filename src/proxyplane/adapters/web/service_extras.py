"""What the service page shows besides its basics: add-ons, add-IPs countries, IP refresh terms, sticky
sessions (rotating services), top destinations and errors by category. Each part is a read operation;
one that does not apply to the service (kind, status) is left out instead of failing the page."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from proxyplane.adapters.web.base import call, has_op
from proxyplane.core.errors import DomainError

TTL_CHOICES = (1, 2, 3, 5, 10, 15, 30, 60, 120, 240, 720, 1440)  # minutes; the API takes any 1..1440
STICKY_MODES = {
    "rotating": "Rotating: a new exit IP for every connection",
    "sticky": "Sticky: one exit IP per session id for the TTL",
    "pinned": "Pinned: always the exit IP you choose",
}


async def optional(request: Request, name: str, data: dict[str, Any]) -> Any:
    """An operation that does not apply to every service kind (static vs rotating): None when refused."""
    if not has_op(name):
        return None
    try:
        return await call(request, name, data)
    except DomainError:
        return None


def traffic_only(found: Any) -> list[Any]:
    """The top destinations that carried something: a refusal before any relaying (wrong password, not
    whitelisted) is metered against its destination with no request and no byte, and a SOCKS5 UDP refusal
    has no host at all; neither is a destination worth a row (issue 30.15)."""
    items = found.destinations if found is not None else []
    return [d for d in items if d.host and (d.requests or d.bytes_total)]


async def extras(request: Request, svc: Any, span: dict[str, Any]) -> dict[str, Any]:
    ref = {"service_id": str(svc.service_id)}
    rotating = svc.product_kind == "proxy_rotating"
    live = svc.status == "active"
    out: dict[str, Any] = {
        "rotating": rotating,
        "addons": await optional(request, "list_addons", ref),
        "addon_offers": await optional(request, "list_available_addons", ref) if live else None,
        "destinations": traffic_only(await optional(request, "get_top_destinations", {**span, "limit": 8})),
        "error_kinds": await optional(request, "get_usage_errors", span),
        "refresh": None,
        "add_countries": [],
        "sticky": None,
        "sticky_mode": None,
        "ttl_choices": TTL_CHOICES,
        "sticky_modes": STICKY_MODES,
    }
    if rotating:
        out["sticky"] = await optional(request, "list_sticky_sessions", ref)
        out["sticky_mode"] = await optional(request, "get_sticky_mode", ref)
    elif live:
        out["refresh"] = await optional(request, "get_refresh_status", ref)
        pool = {"product_kind": svc.product_kind, "geo_source": svc.geo_source}
        listing = await optional(request, "list_countries", pool)
        out["add_countries"] = [c for c in (listing.countries if listing else []) if c.available_ips > 0]
    return out
