"""What the service page's sub-users section shows (issue 18): the sub-users, each one's usage in the
page's window, the endpoint their proxy line uses, and the password of the one just created or given a new
password (once, from the reveal cookie). Routes: adapters/web/subusers.py."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from proxyplane.adapters.web.forms import take_reveal
from proxyplane.adapters.web.service_extras import optional
from proxyplane.domains.subusers.ops import SubuserOut

USAGE_SHOWN = 25  # sub-users whose window usage the page reads (one read each)
MB = 1_048_576


def revealed_key(sid: str) -> str:
    return f"subuser:{sid}"


def new_subuser(request: Request, sid: str) -> Any:
    """The sub-user just created or given a new password (with its password), once."""
    return take_reveal(request, revealed_key(sid), SubuserOut)


def endpoint_of(svc: Any, config: Any, endpoints: Any) -> str:
    """host:port a sub-user connects to (HTTP): the rotating gateway, or the first exit IP."""
    if config is not None and config.http_port is not None:
        return f"{config.host}:{config.http_port}"
    items = endpoints.endpoints if endpoints is not None else []
    return str(items[0].http) if items else ""


async def subusers_view(
    request: Request, svc: Any, span: dict[str, Any], config: Any, endpoints: Any
) -> dict[str, Any]:
    """The sub-users section's data: the list (None when the operation does not apply) and per sub-user
    its usage in the page's window."""
    listing = await optional(request, "list_subusers", {"service_id": str(svc.service_id)})
    usage: dict[str, Any] = {}
    for sub in (listing.items if listing else [])[:USAGE_SHOWN]:
        usage[str(sub.subuser_id)] = await optional(
            request, "get_service_usage", {**span, "subuser_id": str(sub.subuser_id)}
        )
    return {
        "subusers": listing,
        "subuser_usage": usage,
        "subuser_endpoint": endpoint_of(svc, config, endpoints),
        "mb": MB,
    }
