"""Tool subsets (issue 21.4): `/api/v1/mcp?tools=usage,proxy` lists and serves only the tools of those
groups (a group is an operation tag of the registry, e.g. usage, proxy, services, wallet, billing), and
`?scopes=granted` only the tools the token's scopes allow. Both are opt-in per URL (the default lists every
tool, so an agent still sees a tool it lacks the scope for and is told which scope to ask for). A call to
a tool outside the subset is refused as an error result; nothing runs.

A server middleware of the SDK (runs for every inbound message, in both protocol eras): it filters the
`tools/list` result and guards `tools/call` by the HTTP request's query string and authenticated
principal (set by the API-key gate)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ListToolsResult, TextContent

from proxyplane.adapters.mcp.tools import PRINCIPAL
from proxyplane.ops import Operation

GRANTED = "granted"


def tool_groups(ops: Iterable[Operation]) -> dict[str, frozenset[str]]:
    """Group name (an operation tag) -> the names of its tools."""
    groups: dict[str, set[str]] = {}
    for op in ops:
        for tag in op.tags:
            groups.setdefault(tag, set()).add(op.name)
    return {tag: frozenset(names) for tag, names in sorted(groups.items())}


class ToolSubset:
    """The SDK middleware: `?tools=` groups and `?scopes=granted`."""

    def __init__(self, ops: Iterable[Operation]) -> None:
        served = list(ops)
        self.groups = tool_groups(served)
        self.scopes = {op.name: op.scopes for op in served}

    def allowed(self, request: Any) -> frozenset[str] | None:
        """The tool names this request may see (None: all). Raises MCPError for an unknown group."""
        query = getattr(request, "query_params", None)
        if query is None:
            return None
        names: set[str] | None = None
        wanted = [g.strip() for g in (query.get("tools") or "").split(",") if g.strip()]
        if wanted:
            unknown = sorted(set(wanted) - set(self.groups))
            if unknown:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"unknown tool group(s) {', '.join(unknown)} in ?tools=; the groups are: "
                    + ", ".join(self.groups),
                )
            names = set().union(*(self.groups[g] for g in wanted))
        if query.get("scopes") == GRANTED:
            state = getattr(request, "scope", {}).get("state") or {}
            principal = state.get(PRINCIPAL)
            held = principal.scopes if principal is not None else frozenset()
            fits = {name for name, needs in self.scopes.items() if needs <= held}
            names = fits if names is None else names & fits
        return None if names is None else frozenset(names)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        allowed = self.allowed(ctx.request)
        if allowed is None:
            return await call_next(ctx)
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name not in allowed:
                text = (
                    f"tool_not_in_subset: {name} is not among the tools this connection asked for "
                    "(?tools= / ?scopes=granted in the MCP URL); nothing was done."
                )
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
            return await call_next(ctx)
        result = await call_next(ctx)
        if isinstance(result, ListToolsResult):
            return result.model_copy(update={"tools": [t for t in result.tools if t.name in allowed]})
        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            return {**result, "tools": [t for t in result["tools"] if t.get("name") in allowed]}
        return result
