"""What the service page's sub-users section shows (issue 18): the sub-users (with their names), each
one's usage in the page's window, ready-to-copy proxy URLs, and the password of the one just created or
given a new password (once, from the reveal cookie). Routes: adapters/web/subusers.py.

The proxy URLs work as pasted (issue 30.9): scheme, login, the sub-user's real password (read with
list_subusers' reveal, as the service's own lines read get_proxy_auth's) and the endpoint; the page text
shows the password masked, only the Copy buttons carry it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request

from proxyplane.adapters.web.forms import take_reveal
from proxyplane.adapters.web.service_extras import optional
from proxyplane.domains.subusers.ops import SubuserOut

USAGE_SHOWN = 25  # sub-users whose window usage the page reads (one read each)
MASK = "•" * 8


@dataclass(frozen=True)
class SubuserLine:
    label: str  # "HTTP" / "SOCKS5"
    shown: str  # password masked
    copied: str  # what a client takes as is


def revealed_key(sid: str) -> str:
    return f"subuser:{sid}"


def new_subuser(request: Request, sid: str) -> Any:
    """The sub-user just created or given a new password (with its password), once."""
    return take_reveal(request, revealed_key(sid), SubuserOut)


def endpoints_of(config: Any, endpoints: Any) -> list[tuple[str, str, str]]:
    """(label, scheme, host:port) a sub-user connects to: the rotating gateway's HTTP and SOCKS5 ports,
    or a static service's first exit IP (a sub-user's login works on each of the service's IPs)."""
    if config is not None and config.http_port is not None:
        out = [("HTTP", "http", f"{config.host}:{config.http_port}")]
        if config.socks5_port is not None:
            out.append(("SOCKS5", "socks5h", f"{config.host}:{config.socks5_port}"))
        return out
    items = endpoints.endpoints if endpoints is not None else []
    if not items:
        return []
    return [("HTTP", "http", str(items[0].http)), ("SOCKS5", "socks5h", str(items[0].socks5))]


def lines_for(login: str, password: str | None, targets: list[tuple[str, str, str]]) -> list[SubuserLine]:
    """Proxy URLs of one sub-user; none without its password (a URL without it would be refused)."""
    if not password or set(password) == {"*"}:
        return []
    user, secret = quote(login, safe=""), quote(password, safe="")
    return [
        SubuserLine(label, f"{scheme}://{user}:{MASK}@{where}", f"{scheme}://{user}:{secret}@{where}")
        for label, scheme, where in targets
    ]


async def subusers_view(
    request: Request, svc: Any, span: dict[str, Any], config: Any, endpoints: Any
) -> dict[str, Any]:
    """The sub-users section's data: the list (None when the operation does not apply or the service is
    not paid yet), per sub-user its proxy URLs and its usage in the page's window."""
    if svc.status == "pending":
        return {"subusers": None, "subuser_usage": {}, "subuser_lines": {}, "subuser_targets": []}
    sid = str(svc.service_id)
    listing = await optional(request, "list_subusers", {"service_id": sid, "reveal": True})
    targets = endpoints_of(config, endpoints)
    usage: dict[str, Any] = {}
    lines: dict[str, list[SubuserLine]] = {}
    for i, sub in enumerate(listing.items if listing else []):
        lines[str(sub.subuser_id)] = lines_for(sub.login, sub.password, targets)
        if i < USAGE_SHOWN:
            usage[str(sub.subuser_id)] = await optional(
                request, "get_service_usage", {**span, "subuser_id": str(sub.subuser_id)}
            )
    return {
        "subusers": listing,
        "subuser_usage": usage,
        "subuser_lines": lines,
        "subuser_targets": targets,
    }
