"""Spending the person confirms (issue 21.3): before a tool that spends money charges anything, the client
is asked through form-mode elicitation with the exact amount (from a dry run of the same call) and what it
buys; a top-up's checkout goes through URL-mode elicitation (payment details never in a form).

How the server asks, per era: in 2026-07-28 the tool answers its first round with an `InputRequiredResult`
(SEP-2322: the question in `input_requests`, the confirmed amount in `request_state`) and the client retries
the same call with the answer; the SDK client drives that loop. A 2025-11-25 client that declared
elicitation at `initialize` has a stateful session (sessions.py), so the tool sends `elicitation/create`
on it and waits for the answer. A 2025-11-25 client without elicitation is stateless and cannot be asked:
a key or token that requires confirmation is refused there with a clear error (docs/decisions/mcp.md)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context as MCPContext
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

from proxyplane.core.errors import PriceChanged
from proxyplane.domains.apikeys.cache import KeyPrincipal
from proxyplane.ops import Caller, Operation, invoke
from proxyplane.platform import Platform

QUESTION = "confirm_spend"  # the input request's key in InputRequiredResult.input_requests
CHECKOUT = "checkout"
ASKING_ERA = "2026-07-28"  # first protocol whose stateless core can ask the client (InputRequiredResult)
PROBE_GUARD = -1  # a dry run: every charge is above it, so check_guards rolls the whole call back


class SpendConfirmation(BaseModel):
    confirm: bool = Field(title="Pay this amount", description="true to pay, false to cancel")


def dollars(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def asks_by_result(context: MCPContext[Any, Any]) -> bool:
    """The 2026-07-28 era: a question is a result (`InputRequiredResult`), not a request on a session."""
    version = context.protocol_version
    return version is not None and is_version_at_least(version, ASKING_ERA)


def can_ask(context: MCPContext[Any, Any], mode: str) -> bool:
    """Whether this request can put a question to the client: the 2026-07-28 era (stateless asking) or a
    2025-11-25 session with a back channel, and a client that declared the elicitation capability in that
    mode ("form" also for a bare `{}`)."""
    if not asks_by_result(context) and not context.session.can_send_request:
        return False
    capabilities = context.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    if mode == "url":
        return elicitation.url is not None
    return elicitation.form is not None or elicitation.url is None


def confirmation_required(principal: KeyPrincipal | None) -> bool:
    """The key's (or OAuth token's) rule: confirm every spend (api_keys.confirm_spending, 0018g; the
    grant's for a token), carried by the principal the key gate loaded: no query here."""
    return principal is not None and principal.confirm_spending


def tool_error(code: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {message}")], is_error=True)


def refused_without_asking() -> CallToolResult:
    return tool_error(
        "confirmation_required",
        "this key requires the person to confirm every spend, and this client cannot be asked (it did "
        "not declare the elicitation capability at initialize or in the request). Nothing was charged. "
        "Connect with a client that supports form-mode elicitation.",
    )


async def price_of(platform: Platform, op: Operation, caller: Caller, data: BaseModel | None) -> int | Any:
    """The exact charge of this call: the call itself, rolled back by an impossible price guard. Returns
    the cents, or the result itself when the idempotency key replays a finished call (nothing to pay).
    Any other refusal (insufficient balance, a cap, validation) is raised as it would be for real."""
    try:
        replayed = await invoke(platform, op, caller, data, max_total_cents=PROBE_GUARD)
    except PriceChanged as exc:
        if exc.extra.get("max_total_cents") != PROBE_GUARD:
            raise
        return int(exc.extra["current_price_cents"])
    return replayed


def what_it_buys(op: Operation, arguments: dict[str, Any]) -> str:
    hidden = ("idempotency_key", "max_total_cents", "use_balance")
    shown = {k: v for k, v in arguments.items() if k not in hidden}
    return f"{op.name.replace('_', ' ')}: {op.summary} Details: {json.dumps(shown, sort_keys=True)}"


def payment_message(op: Operation, cents: int, arguments: dict[str, Any]) -> str:
    return (
        f"Pay {dollars(cents)} ({cents} cents) from the ProxyPlane wallet for {what_it_buys(op, arguments)}"
    )


def declined(cents: int, action: str) -> CallToolResult:
    return tool_error(
        "confirmation_declined",
        f"the person did not confirm paying {dollars(cents)} ({action}); nothing was charged.",
    )


async def ask_in_session(
    context: MCPContext[Any, Any], op: Operation, cents: int, arguments: dict[str, Any]
) -> int | CallToolResult:
    """2025-11-25 session: `elicitation/create` now, wait for the answer; the confirmed cents or a refusal."""
    answer = await context.elicit(payment_message(op, cents, arguments), SpendConfirmation)
    if answer.action == "accept" and answer.data.confirm:
        return cents
    return declined(cents, answer.action if answer.action != "accept" else "not ticked")


def ask_to_pay(op: Operation, cents: int, arguments: dict[str, Any]) -> InputRequiredResult:
    message = payment_message(op, cents, arguments)
    schema = SpendConfirmation.model_json_schema()
    schema.pop("title", None)
    question = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
    return InputRequiredResult(
        input_requests={QUESTION: question}, request_state=json.dumps({"op": op.name, "cents": cents})
    )


def confirmed_cents(context: MCPContext[Any, Any], op: Operation) -> int | CallToolResult | None:
    """The amount the person confirmed on the earlier round; a declined or cancelled answer is a tool
    error (nothing charged); None when nothing was asked yet (or the answer does not fit the question)."""
    answer = (context.input_responses or {}).get(QUESTION)
    try:
        state = json.loads(context.request_state or "")
    except ValueError:
        return None
    if not isinstance(answer, ElicitResult) or not isinstance(state, dict) or state.get("op") != op.name:
        return None
    cents = state.get("cents")
    if not isinstance(cents, int) or isinstance(cents, bool) or cents < 0:
        return None
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    return cents if confirmed else declined(cents, answer.action)


def checkout_params(deposit: dict[str, Any]) -> ElicitRequestURLParams | None:
    """A top-up's payment happens at the checkout page, never in a form: URL-mode elicitation."""
    url = deposit.get("checkout_url")
    if not isinstance(url, str) or not url:
        return None
    cents = deposit.get("amount_cents")
    amount = f" of {dollars(cents)}" if isinstance(cents, int) else ""
    return ElicitRequestURLParams(
        message=f"Open the ProxyPlane checkout to pay the top-up{amount}.",
        url=url,
        elicitation_id=str(deposit.get("deposit_id") or url),
    )


def checkout_question(deposit: dict[str, Any]) -> InputRequiredResult | None:
    params = checkout_params(deposit)
    if params is None:
        return None
    return InputRequiredResult(
        input_requests={CHECKOUT: ElicitRequest(params=params)}, request_state=CHECKOUT
    )


async def checkout_in_session(context: MCPContext[Any, Any], deposit: dict[str, Any]) -> str | None:
    """2025-11-25 session: show the checkout link now; what the person did (None: no link to show)."""
    params = checkout_params(deposit)
    if params is None:
        return None
    answer = await context.elicit_url(params.message, params.url, params.elicitation_id or params.url)
    return answer.action


def checkout_action(context: MCPContext[Any, Any]) -> str | None:
    """What the person did with the checkout link shown at the previous round (None: not asked yet)."""
    answer = (context.input_responses or {}).get(CHECKOUT)
    return answer.action if isinstance(answer, ElicitResult) else None
