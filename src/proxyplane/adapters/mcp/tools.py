"""MCP tools generated from the operation registry: one tool per operation with `mcp=True`.

Name, description, input schema (path, query and body fields flattened into one object), output schema,
annotations and the call itself all come from the Operation; a tool call runs the same `invoke()` as REST
with a Caller from the same key check (channel "mcp"). Nothing here is written per tool."""

from __future__ import annotations

import copy
import difflib
import json
import logging
from typing import Any

from mcp.server.mcpserver import Context as MCPContext
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import (
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, create_model

from proxyplane.adapters.mcp.confirm import (
    ask_in_session,
    ask_to_pay,
    asks_by_result,
    can_ask,
    checkout_action,
    checkout_in_session,
    checkout_question,
    confirmation_required,
    confirmed_cents,
    price_of,
    refused_without_asking,
)
from proxyplane.adapters.mcp.limits import warn_near_limits
from proxyplane.core.bounds import CENTS_MAX
from proxyplane.core.errors import DomainError
from proxyplane.domains.apikeys.cache import KeyPrincipal
from proxyplane.ops import Caller, Effect, Operation, invoke
from proxyplane.platform import Platform

log = logging.getLogger(__name__)

PRINCIPAL = "proxyplane_principal"  # key in the ASGI scope state, set by the API-key gate
CONTEXT_KWARG = "mcp_context"
MAX_TOTAL = "max_total_cents"
EXPECTED_PRICE = "expected_price_cents"
TOP_UP = "init_deposit"  # its checkout URL is offered through URL-mode elicitation
FILE_FIELD = "content_base64"  # a result carrying a file (base64) is also attached as an embedded resource
DESTRUCTIVE_PREFIXES = ("cancel", "revoke", "delete", "remove", "purge", "reset", "replace")

# What an agent should do next, per error code (added to the is_error text).
HINTS = {
    "insufficient_balance": "Start a top-up with init_deposit (the customer pays it at the checkout URL), "
    "wait until get_deposit reports paid, then retry with the same idempotency_key.",
    "price_changed": "Check the current price, then retry with a guard that accepts it.",
    "missing_scope": "Nothing was done. Ask the account owner for a key that holds the named scope(s).",
    "idempotency_key_reused": "Use a new idempotency_key for a different request.",
    "kyc_required": "The customer must finish identity verification in the dashboard, or pick another "
    "payment method (list_payment_methods).",
}


class ToolArguments(ArgModelBase):
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def spends_money(op: Operation) -> bool:
    return op.effect == Effect.SPENDS_MONEY


def one_of_rule(op: Operation) -> list[Any]:
    """The input's "one of these fields is required" rule (json_schema_extra anyOf of required lists)."""
    extra = op.input.model_config.get("json_schema_extra") if op.input is not None else None
    alternatives = extra.get("anyOf") if isinstance(extra, dict) else None
    return list(alternatives) if isinstance(alternatives, list) else []


def needs_max_total(op: Operation) -> bool:
    """Spending tools get a required `max_total_cents` guard (also over an optional one of the input),
    unless the input makes it one of several guards (buy_addon: or its deprecated `expected_price_cents`,
    issue 30.7)."""
    return spends_money(op) and not one_of_rule(op)


def forced_arguments(op: Operation) -> dict[str, Any]:
    """Input fields the MCP channel fixes: agent purchases use the wallet balance only (seed, Auth. 7)."""
    if op.input is not None and "use_balance" in op.input.model_fields:
        return {"use_balance": True}
    return {}


def is_destructive(op: Operation) -> bool:
    if "destructive" in op.extra:
        return bool(op.extra["destructive"])
    return op.method == "DELETE" or op.name.startswith(DESTRUCTIVE_PREFIXES)


def tool_annotations(op: Operation) -> ToolAnnotations:
    read = op.effect == Effect.READ
    return ToolAnnotations(
        title=op.name.replace("_", " ").capitalize(),
        read_only_hint=read,
        destructive_hint=False if read else is_destructive(op),
        idempotent_hint=op.idempotent,
        open_world_hint=False,
    )


def description(op: Operation) -> str:
    scopes = ", ".join(sorted(op.scopes)) if op.scopes else "none (any valid API key)"
    effect = {
        Effect.READ: "read-only; changes nothing.",
        Effect.WRITE: "changes the account's configuration; charges nothing.",
        Effect.SPENDS_MONEY: "SPENDS MONEY from the wallet balance (never a card checkout). "
        "Pass an idempotency_key: a retry with the same key never charges twice.",
    }[op.effect]
    parts = [op.summary, f"Scopes: {scopes}.", f"Effect: {effect}"]
    if spends_money(op):
        parts.append(
            f"{MAX_TOTAL} is a price guard: if the call would charge more, nothing is charged and the "
            "error states the current price."
        )
    if op.input is not None and EXPECTED_PRICE in op.input.model_fields:
        parts.append(f"{EXPECTED_PRICE} is deprecated: send {MAX_TOTAL}.")
    return " ".join(parts)


def argument_model(op: Operation) -> type[ArgModelBase]:
    fields: dict[str, Any] = {}
    forced = forced_arguments(op)
    if op.input is not None:
        for name, info in op.input.model_fields.items():
            if name not in forced:
                fields[name] = (info.annotation, info)
    if spends_money(op) and "idempotency_key" in fields:
        fields["idempotency_key"] = (
            str,
            Field(
                min_length=1,
                max_length=200,
                description="required for tools that spend: a retry with the same key never charges twice",
            ),
        )
    if needs_max_total(op):
        fields[MAX_TOTAL] = (
            int,
            Field(
                ge=0,
                le=CENTS_MAX,  # the bound of every cents input (core/bounds.py), as the REST field says
                description="the most this call may charge, in cents; above it nothing is charged",
            ),
        )
    model_name = "".join(p.capitalize() for p in op.name.split("_")) + "Arguments"
    base: type[ToolArguments] = ToolArguments
    if one_of_rule(op):  # one of several fields required (buy_addon's guards): the tool's schema says so
        config = ConfigDict(**ToolArguments.model_config, json_schema_extra={"anyOf": one_of_rule(op)})
        base = type(model_name + "Base", (ToolArguments,), {"model_config": config})
    return create_model(model_name, __base__=base, **fields)


def output_model(op: Operation) -> tuple[type[BaseModel] | None, str | None]:
    """The structured-output model and, for RootModel outputs, the key the root value is wrapped under
    (MCP structured content must be an object): `items` for lists, `result` otherwise."""
    if op.output is None:
        return None, None
    if issubclass(op.output, RootModel):
        root = op.output.model_fields["root"].annotation
        key = "items" if getattr(root, "__origin__", None) is list else "result"
        fields: dict[str, Any] = {key: (root, ...)}
        return create_model(op.output.__name__ + "Result", __doc__=op.output.__doc__, **fields), key
    return op.output, None


def structured(result: Any, wrap_key: str | None) -> dict[str, Any]:
    if isinstance(result, RootModel):
        value = result.model_dump(mode="json")
        return {wrap_key or "result": value}
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    return {"result": result}


def error_result(exc: DomainError) -> CallToolResult:
    text = f"{exc.code}: {exc.message}"
    details = {k: v for k, v in exc.extra.items() if k != "errors"}
    if exc.code == "insufficient_balance" and "required_cents" in details and "balance_cents" in details:
        details["missing_cents"] = int(details["required_cents"]) - int(details["balance_cents"])
    if details:
        text += " (" + ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in details.items()) + ")"
    if exc.code in HINTS:
        text += ". " + HINTS[exc.code]
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def validation_result(exc: ValidationError) -> CallToolResult:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )
    text = f"validation_error: the arguments are not valid: {problems}. Nothing was done."
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def arguments_message(tool: str, model: type[BaseModel], exc: ValidationError) -> str:
    """A short answer to arguments that do not fit the tool (issue 22.7): the unknown names (with the
    likely intended one), the missing required ones, other problems, and the fields the tool expects."""
    fields = model.model_fields
    unknown, missing, other = [], [], []
    for e in exc.errors(include_url=False):
        name = ".".join(str(p) for p in e["loc"]) or "arguments"
        if e["type"] == "extra_forbidden":
            guess = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.4)
            unknown.append(f"{name} (did you mean {guess[0]}?)" if guess else name)
        elif e["type"] == "missing":
            missing.append(name)
        else:
            other.append(f"{name}: {e['msg']}")
    parts = []
    if unknown:
        parts.append("unknown argument(s): " + ", ".join(unknown))
    if missing:
        parts.append("missing required: " + ", ".join(missing))
    parts.extend(other)
    expected = ", ".join(f"{n} (required)" if f.is_required() else n for n, f in fields.items()) or "none"
    return f"validation_error: {tool}: {'; '.join(parts)}. Expected arguments: {expected}. Nothing was done."


INVALID = "__invalid_arguments__"  # carries arguments_message from the validation to the tool body


class ToolMetadata(FuncMetadata):
    """The SDK's argument validation, except that arguments which do not fit reach the tool body as
    {INVALID: arguments_message} (answered as an error result) instead of the SDK's raw validation dump."""

    tool_name: str = ""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().validate_arguments(arguments_to_validate)
        except ValidationError as exc:
            return {INVALID: arguments_message(self.tool_name, self.arg_model, exc)}


def content_blocks(op: Operation, content: dict[str, Any]) -> list[ContentBlock]:
    """The JSON as text; a file result (`content_base64` + `content_type`, e.g. the invoice PDF) is also
    attached as an embedded resource, and its text leaves out the base64 (it would only repeat it)."""
    if isinstance(content.get(FILE_FIELD), str) and isinstance(content.get("content_type"), str):
        name = str(content.get("filename") or "file")
        blob = BlobResourceContents(
            uri=f"proxyplane://{op.name}/{name}", mime_type=content["content_type"], blob=content[FILE_FIELD]
        )
        summary = {k: v for k, v in content.items() if k != FILE_FIELD}
        summary["attached"] = f"{name} as an embedded resource ({content['content_type']})"
        return [
            TextContent(type="text", text=json.dumps(summary, ensure_ascii=False)),
            EmbeddedResource(type="resource", resource=blob),
        ]
    return [TextContent(type="text", text=json.dumps(content, ensure_ascii=False))]


def principal_from(context: MCPContext[Any, Any]) -> KeyPrincipal | None:
    request = context.request_context.request
    scope: dict[str, Any] = getattr(request, "scope", {}) or {}
    principal: KeyPrincipal | None = (scope.get("state") or {}).get(PRINCIPAL)
    return principal


def caller_from(context: MCPContext[Any, Any]) -> Caller:
    """The Caller for this HTTP request: the principal the API-key gate authenticated (same
    `authenticate()` as REST), the client IP and user agent, channel "mcp"."""
    request = context.request_context.request
    scope: dict[str, Any] = getattr(request, "scope", {}) or {}
    principal: KeyPrincipal | None = (scope.get("state") or {}).get(PRINCIPAL)
    client = scope.get("client")
    ip = client[0] if client else ""
    if principal is None:
        return Caller.anonymous(ip, channel="mcp")
    headers = context.headers or {}
    return Caller(
        customer_id=principal.customer_id,
        key_id=principal.key_id,
        scopes=principal.scopes,
        member_id=principal.member_id,
        client_ip=ip,
        channel="mcp",
        user_agent=headers.get("user-agent", ""),
    )


async def confirm_spend(
    platform: Platform,
    op: Operation,
    caller: Caller,
    data: BaseModel | None,
    context: MCPContext[Any, Any],
) -> int | None | CallToolResult | InputRequiredResult:
    """None: charge as asked (no confirmation possible or needed); cents: the amount the person confirmed
    (the call's price guard); a result: the question to ask, a replay, or the refusal."""
    if not can_ask(context, "form"):
        if confirmation_required(principal_from(context)):
            return refused_without_asking()
        return None
    confirmed = confirmed_cents(context, op)
    if confirmed is not None:
        return confirmed
    price = await price_of(platform, op, caller, data)
    if not isinstance(price, int):  # the idempotency key replays a finished call: nothing to confirm
        return None
    shown = data.model_dump(mode="json", exclude_none=True) if data is not None else {}
    if asks_by_result(context):
        return ask_to_pay(op, price, shown)
    return await ask_in_session(context, op, price, shown)  # a 2025-11-25 session (sessions.py)


_SHAPES: dict[int, tuple[Operation, tuple[Any, ...]]] = {}


def tool_shape(op: Operation) -> tuple[str | None, ToolMetadata, dict[str, Any]]:
    """A tool's result key, argument and output models (ToolMetadata) and input schema (the caller copies
    it), built once per process per operation: every app builds its MCP server again (tests one a test)."""
    if id(op) not in _SHAPES:  # the operation is kept with its shape: its id stays its own
        args_model = argument_model(op)
        out_model, wrap_key = output_model(op)
        metadata = ToolMetadata(arg_model=args_model, output_model=out_model, tool_name=op.name)
        schema = args_model.model_json_schema(by_alias=True)
        _SHAPES[id(op)] = (op, (wrap_key, metadata, schema))
    wrap_key, metadata, schema = _SHAPES[id(op)][1]
    return wrap_key, metadata, schema


def build_tool(platform: Platform, op: Operation) -> Tool:
    wrap_key, metadata, schema = tool_shape(op)
    forced = forced_arguments(op)

    async def run(
        mcp_context: MCPContext[Any, Any], **arguments: Any
    ) -> CallToolResult | InputRequiredResult:
        if INVALID in arguments:
            return CallToolResult(content=[TextContent(type="text", text=arguments[INVALID])], is_error=True)
        caller = caller_from(mcp_context)
        max_total = arguments.pop(MAX_TOTAL, None)
        data = None
        try:
            if op.input is not None:
                values = {k: v for k, v in arguments.items() if k in op.input.model_fields}
                if max_total is not None and MAX_TOTAL in op.input.model_fields:
                    values[MAX_TOTAL] = max_total  # the operation's own guard (buy_addon)
                data = op.input.model_validate({**values, **forced})
            if spends_money(op):  # the person confirms the exact amount first (issue 21.3)
                asked = await confirm_spend(platform, op, caller, data, mcp_context)
                if not isinstance(asked, int | type(None)):
                    return asked
                if asked is not None:
                    max_total = asked if max_total is None else min(max_total, asked)
            result = await invoke(platform, op, caller, data, max_total_cents=max_total)
        except DomainError as exc:
            return error_result(exc)
        except ValidationError as exc:
            return validation_result(exc)
        if op.output is None:
            return CallToolResult(content=[TextContent(type="text", text=f"ok: {op.name} done")])
        content = structured(result, wrap_key)
        if spends_money(op):  # warnings before limits (issue 21.5)
            await warn_near_limits(platform, mcp_context, caller)
        if op.name == TOP_UP and can_ask(mcp_context, "url"):  # payment at the checkout page (URL mode)
            action = (
                checkout_action(mcp_context)
                if asks_by_result(mcp_context)
                else await checkout_in_session(mcp_context, content)
            )
            if action is None:
                question = checkout_question(content)
                if question is not None:
                    return question
            else:
                content = {**content, "checkout": action}
        return CallToolResult(content=content_blocks(op, content), structured_content=content)

    run.__name__ = op.name
    return Tool(
        fn=run,
        name=op.name,
        title=tool_annotations(op).title,
        description=description(op),
        parameters=copy.deepcopy(schema),
        fn_metadata=metadata,
        is_async=True,
        context_kwarg=CONTEXT_KWARG,
        annotations=tool_annotations(op),
        meta={
            "proxyplane/scopes": sorted(op.scopes),
            "proxyplane/effect": op.effect.value,
            "proxyplane/spends_money": spends_money(op),  # the fourth label next to the three hints
            "proxyplane/groups": list(op.tags),
        },
    )


def served_operations(registry: dict[str, Operation]) -> list[Operation]:
    """Operations served as tools: those the "mcp" door serves (`doors`, `mcp=True`), and a spending
    operation only with an idempotency_key."""
    ops = []
    for op in registry.values():
        if not op.serves("mcp"):
            continue
        if spends_money(op) and not op.takes_idempotency_key:
            log.warning(
                "operation %s spends money but takes no idempotency_key: not served over MCP", op.name
            )
            continue
        ops.append(op)
    return ops


def build_tools(platform: Platform, registry: dict[str, Operation]) -> list[Tool]:
    return [build_tool(platform, op) for op in served_operations(registry)]
