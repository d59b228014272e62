"""One operation, one definition: the registry that REST, MCP and legacy all serve.

An Operation declares its name (REST operation_id == MCP tool name), its REST binding, input and output
models, the scopes a key must ALL hold, its effect, and the handler `async (ctx, data) -> output`.
`invoke()` checks the caller, opens the unit of work, records the key's last use in it (when due),
replays idempotent results, runs the handler and commits exactly once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import (
    AlreadyApplied,
    IdempotencyConflict,
    InsufficientBalance,
    MissingScope,
    PriceChanged,
    Unauthorized,
)
from proxyplane.core.text_input import forbid_nul
from proxyplane.domains.accounts.verification import CHECKED_IN_CONTEXT, require_verified
from proxyplane.domains.apikeys.service import last_use_due, record_last_use
from proxyplane.domains.team import activity
from proxyplane.observability.metrics import observed
from proxyplane.storage.engine import UnitOfWork
from proxyplane.storage.outage import stale_connection
from proxyplane.storage.repos import idempotency

if TYPE_CHECKING:
    from proxyplane.platform import Platform

log = logging.getLogger(__name__)


class Effect(StrEnum):
    READ = "read"
    WRITE = "write"
    SPENDS_MONEY = "spends_money"


class Auth(StrEnum):
    KEY = "key"  # an API key is required
    OPTIONAL = "optional"  # a key may be sent; it enables extra fields
    NONE = "none"  # public


@dataclass(frozen=True)
class Caller:
    customer_id: int | None
    key_id: Any = None
    scopes: frozenset[str] = frozenset()
    client_ip: str = ""
    channel: str = "rest"
    user_agent: str = ""
    # an operator (issue 33): their id (None for the host's CLI), role and who they are ("cli" or an email)
    operator_id: int | None = None
    role: str = ""
    actor: str = ""
    # a team member acting on the account (issue 34.5: team_members.id; `role` is then theirs, `actor` is
    # who they are): the dashboard session's membership, or the member who made the API key
    member_id: int | None = None

    @classmethod
    def anonymous(cls, client_ip: str = "", channel: str = "rest") -> Caller:
        return cls(customer_id=None, client_ip=client_ip, channel=channel)


@dataclass
class Context:
    uow: UnitOfWork
    caller: Caller
    platform: Platform
    # what an operator operation's audit row says beyond its input and result: target, before, after
    audit: dict[str, Any] = field(default_factory=dict)
    # an operator door's once-only key for this call (a console form token, an Idempotency-Key), if any
    door_key: str | None = None

    @property
    def session(self) -> Any:
        return self.uow.session

    @property
    def customer_id(self) -> int:
        if self.caller.customer_id is None:
            raise Unauthorized("an API key is required")
        return self.caller.customer_id

    @property
    def balance_only(self) -> bool:
        """Agents (MCP) pay from the wallet balance only: never open a processor checkout for a remainder."""
        return self.caller.channel == "mcp"


Handler = Callable[[Context, Any], Awaitable[Any]]
CUSTOMER_API = frozenset({"rest", "mcp"})
LEGACY = frozenset({"legacy"})
OPERATOR = frozenset({"cli"})  # an operator action of the host's CLI only (a path or a customer's secret)
# the operator's doors (issue 33): the CLI, the operator API at /api/admin/v1, the console at /admin
OPERATOR_DOORS = frozenset({"cli", "admin_api", "console"})


@dataclass(frozen=True)
class Operation:
    name: str
    summary: str
    method: str
    path: str
    handler: Handler
    input: type[BaseModel] | None = None
    output: type[BaseModel] | None = None
    scopes: frozenset[str] = frozenset()
    effect: Effect = Effect.READ
    auth: Auth = Auth.KEY
    status_code: int = 200
    tags: tuple[str, ...] = ()
    mcp: bool = True  # also served as an MCP tool
    extra: dict[str, Any] = field(default_factory=dict)
    # the doors that serve it: "rest" and "mcp" (the customer API), "legacy" (the legacy account API);
    # an operation of one door only (legacy, operator) is never served by the others
    doors: frozenset[str] = CUSTOMER_API
    # an operator operation's permission (domains/operators/roles.py: the roles holding it may run it)
    permission: str = ""
    # a reseller's permission for it (issue 33.4), "" when resellers may not run it, and the input field
    # naming the one customer it acts on (customer_id, email, service_id, ticket_id): a reseller gets 404
    # for a customer not bound to it (domains/operators/resellers.py); without one the handler filters
    reseller: str = ""
    bound_by: str = ""

    def serves(self, door: str) -> bool:
        return door in self.doors and (door != "mcp" or self.mcp)

    @property
    def idempotent(self) -> bool:
        """Same call twice leaves the same state (reads, and writes keyed or naturally idempotent)."""
        return self.effect == Effect.READ or self.method in ("PUT", "DELETE") or self.takes_idempotency_key

    @property
    def takes_idempotency_key(self) -> bool:
        return self.input is not None and "idempotency_key" in self.input.model_fields


REGISTRY: dict[str, Operation] = {}


def served(door: str, registry: dict[str, Operation] | None = None) -> dict[str, Operation]:
    """The operations one door serves ("rest", "mcp", "legacy"), in registry order."""
    return {name: op for name, op in (REGISTRY if registry is None else registry).items() if op.serves(door)}


def register(*ops: Operation) -> None:
    for op in ops:
        if op.name in REGISTRY and REGISTRY[op.name] is not op:
            raise ValueError(f"operation {op.name} declared twice")
        REGISTRY[op.name] = op
        if op.input is not None:
            forbid_nul(op.input)  # no NUL in any text input, on every door (core/text_input.py)


def operator_op(
    name: str,
    handler: Handler,
    input: type[BaseModel],
    effect: Effect = Effect.WRITE,
    *,
    permission: str = "",
    doors: frozenset[str] | None = None,
    reseller: str = "",
    bound_by: str = "",
) -> Operation:
    """An operator action `operator_<name>` needing `permission` (issue 33): served by `doors` (the CLI as
    the host's owner, the operator API at /api/admin/v1 + `path`, the console), never by a customer's door;
    no customer API key (Auth.NONE): invoke checks the operator's role and writes the audit row. Without a
    permission of its own: "host.cli" (owners only) on the CLI door only. `reseller`, `bound_by`: see
    Operation (issue 33.4: a reseller runs it on its own customers only)."""
    if doors is None:
        doors = OPERATOR_DOORS - {"console"} if permission else OPERATOR
    return Operation(
        name=f"operator_{name}",
        summary=f"operator: {name.replace('_', ' ')}",
        method="GET" if effect == Effect.READ else "POST",
        path=f"/{name}",
        handler=handler,
        input=input,
        effect=effect,
        auth=Auth.NONE,
        mcp=False,
        doors=doors,
        permission=permission or "host.cli",
        reseller=reseller,
        bound_by=bound_by,
    )


def web_op(
    name: str,
    handler: object,
    input: type[BaseModel] | None,
    output: type[BaseModel] | None,
    *,
    effect: Effect = Effect.WRITE,
    auth: Auth = Auth.KEY,
) -> Operation:
    """A dashboard action `web_<name>`: served by the web door only (never REST or MCP), called by the
    dashboard's pages through invoke with the signed-in customer (Auth.KEY) or nobody (Auth.NONE)."""
    return Operation(
        name=f"web_{name}",
        summary=f"dashboard: {name.replace('_', ' ')}",
        method="POST",
        path=f"/{name}",
        handler=handler,  # type: ignore[arg-type]
        input=input,
        output=output,
        effect=effect,
        auth=auth,
        mcp=False,
        doors=frozenset({"web"}),
    )


def check_access(op: Operation, caller: Caller) -> None:
    if op.auth == Auth.KEY and caller.customer_id is None:
        raise Unauthorized("an API key is required: send Authorization: Bearer <API_KEY>")
    if op.auth == Auth.KEY:
        missing = sorted(op.scopes - caller.scopes)
        if not missing and caller.member_id is not None and op.effect == Effect.SPENDS_MONEY:
            # a team member's role must allow spending, whatever else the operation asks (issue 34.5)
            missing = sorted({"wallet:spend"} - caller.scopes)
        if missing:
            raise MissingScope(
                f"this API key lacks the scope(s) {', '.join(missing)} required by {op.name}",
                missing_scopes=missing,
            )


def _request_hash(data: BaseModel | None) -> str:
    payload = data.model_dump(mode="json", exclude={"idempotency_key"}) if data is not None else {}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


async def _replay(
    uow: UnitOfWork, op: Operation, customer_id: int, key: str, req_hash: str, stored: bool = True
) -> Any:
    row = await idempotency.find(uow.session, customer_id, op.name, key)
    if row is None:
        return None
    if row.request_hash != req_hash:
        raise IdempotencyConflict(
            f"idempotency_key {key!r} was already used for a different {op.name} request",
        )
    if not stored:
        raise AlreadyApplied(f"this {op.name} request was already sent; it ran once")
    return op.output.model_validate(row.response) if op.output else True


def _checks_verified(op: Operation, caller: Caller) -> bool:
    """A customer spending operation that does not check the address itself (accounts/verification.py)."""
    return (
        op.effect == Effect.SPENDS_MONEY
        and caller.customer_id is not None
        and op.name not in CHECKED_IN_CONTEXT
    )


class UndeclaredSpending(RuntimeError):
    """An operation took money from the wallet without being declared Effect.SPENDS_MONEY."""


def check_guards(
    uow: UnitOfWork,
    caller: Caller,
    result: Any,
    max_total_cents: int | None,
    *,
    op_name: str = "",
    spends: bool = True,
) -> None:
    """Checked after the handler and before commit; raising here rolls the whole call back.
    `max_total_cents`: the most this call may take from the wallet (sum of debits in this transaction).
    Agents pay from the balance only: a result that leaves `amount_due_cents` to pay is refused.
    An operation not declared SPENDS_MONEY (`spends` false) that charged anything is refused."""
    charged = uow.call.debited_cents
    if charged and not spends:
        # a programming error: an operation that charges must be declared SPENDS_MONEY so that MCP asks
        # for an idempotency_key and a price guard; refuse (and roll back) rather than charge unguarded
        raise UndeclaredSpending(f"{op_name} charged {charged} cents but is not declared SPENDS_MONEY")
    if max_total_cents is not None and charged > max_total_cents:
        raise PriceChanged(
            f"this call would charge {charged} cents, more than max_total_cents={max_total_cents}; "
            f"nothing was charged. The current price is {charged} cents: retry with "
            f"max_total_cents >= {charged} to accept it",
            current_price_cents=charged,
            max_total_cents=max_total_cents,
        )
    due = getattr(result, "amount_due_cents", None)
    if caller.channel == "mcp" and isinstance(due, int) and due > 0:
        raise InsufficientBalance(
            f"the wallet balance is {due} cents short of this purchase and agents pay from the balance "
            "only; nothing was charged or reserved. Start a top-up with init_deposit (the customer pays "
            "it at the checkout URL), then retry",
            missing_cents=due,
        )


@observed  # requests and latency per operation, channel and outcome (observability/metrics.py)
async def invoke(
    platform: Platform,
    op: Operation,
    caller: Caller,
    data: BaseModel | None,
    *,
    max_total_cents: int | None = None,
    door_key: str | None = None,
) -> Any:
    """Run one operation for one caller in one unit of work; commit once.
    `door_key`: a once-only key the door carries beside the input (a dashboard form token): claimed in
    the operation's transaction like an idempotency_key (a refused call gives it back), no response stored
    (it may hold a secret); a second call with it raises AlreadyApplied (IdempotencyConflict when its
    input differs).
    A call that met a pooled connection the store had dropped (a database restart since it was opened)
    runs once more on a new connection when running it twice is safe (reads, PUT/DELETE, keyed calls:
    the key's claim replays a first run that committed); other calls answer 503 (issue 35)."""
    try:
        return await _invoke(platform, op, caller, data, max_total_cents, door_key)
    except Exception as exc:
        if not (stale_connection(exc) and (op.idempotent or door_key)):
            raise
        log.info("%s met a dropped store connection: run again on a new one (%s)", op.name, exc)
    return await _invoke(platform, op, caller, data, max_total_cents, door_key)


async def _invoke(
    platform: Platform,
    op: Operation,
    caller: Caller,
    data: BaseModel | None,
    max_total_cents: int | None,
    door_key: str | None,
) -> Any:
    check_access(op, caller)
    if op.permission:  # an operator operation: the role's permission, its audit row (operator_calls.py)
        from proxyplane.operator_calls import invoke_operator

        return await invoke_operator(platform, op, caller, data, door_key=door_key)
    key = getattr(data, "idempotency_key", None) if op.takes_idempotency_key else None
    if door_key and caller.customer_id is not None:
        return await _invoke_keyed(platform, op, caller, data, door_key, max_total_cents, store=False)
    if key and caller.customer_id is not None:
        return await _invoke_keyed(platform, op, caller, data, key, max_total_cents)
    used = utcnow()
    use_due = last_use_due(platform.db, caller.key_id, caller.client_ip, used)
    async with platform.db.unit_of_work(write=op.effect != Effect.READ or use_due) as uow:
        if use_due:
            await record_last_use(uow.session, caller.key_id, caller.client_ip, used)
        uow.call.spending_key = caller.key_id
        if _checks_verified(op, caller):  # issue 34: an unconfirmed address does not spend
            await require_verified(uow.session, caller.customer_id)  # type: ignore[arg-type]
        result = await op.handler(Context(uow, caller, platform), data)
        check_guards(
            uow, caller, result, max_total_cents, op_name=op.name, spends=op.effect == Effect.SPENDS_MONEY
        )
        if activity.noted(op, caller):  # who did what on the account (domains/team/activity.py)
            await activity.note(uow.session, op, caller, data)
        await uow.commit(final=True)  # nothing runs in the unit of work after it
    return result


# this call's result and the JSON text stored for it (set in the caller's context: invoke is awaited)
_DUMPED: ContextVar[tuple[Any, str] | None] = ContextVar("pp_dumped", default=None)
_BY_ALIAS: dict[type[BaseModel], bool] = {}


def _dump_is_by_alias(model: type[BaseModel]) -> bool:
    """Whether `model_dump_json()` of `model` is also its by-alias dump: its serialization schema is the
    same by alias or not (no alias, serialization alias or alias generator anywhere in it). Once per model."""
    same = _BY_ALIAS.get(model)
    if same is None:
        try:
            by_alias = model.model_json_schema(by_alias=True, mode="serialization")
            same = by_alias == model.model_json_schema(by_alias=False, mode="serialization")
        except Exception:  # noqa: BLE001 - no schema to compare: dumped by alias apart, as before
            same = False
        _BY_ALIAS[model] = same
    return same


def dumped_json(result: Any) -> str | None:
    """The by-alias JSON text of `result` when this call's idempotency record stored exactly that text for
    that very object (an order's response is then dumped once, not twice), else None."""
    found = _DUMPED.get()
    return found[1] if found is not None and found[0] is result else None


async def _invoke_keyed(
    platform: Platform,
    op: Operation,
    caller: Caller,
    data: Any,
    key: str,
    max_total_cents: int | None,
    store: bool = True,
) -> Any:
    """Idempotent by key: the first committed result is replayed; a concurrent duplicate blocks on the
    unique row, finds it taken and replays the winner's result (two statements: claim, store result)."""
    assert caller.customer_id is not None
    req_hash = _request_hash(data)
    used = utcnow()
    # lean (PostgreSQL): no AsyncSession unless the operation uses the ORM (storage/driver.LeanSession)
    async with platform.db.unit_of_work(write=True, lean=True) as uow:
        use_due = last_use_due(platform.db, caller.key_id, caller.client_ip, used)
        # on PostgreSQL with its BEGIN (storage/repos/idempotency.py)
        claimed = await idempotency.claim(uow.session, caller.customer_id, op.name, key, req_hash)
        if use_due:  # after the claim, so that the claim still goes with the BEGIN (one round trip)
            await record_last_use(uow.session, caller.key_id, caller.client_ip, used)
        if not claimed:
            replayed = await _replay(uow, op, caller.customer_id, key, req_hash, store)
            if replayed is None:
                raise IdempotencyConflict(f"a request with idempotency_key {key!r} is still in progress")
            return replayed
        uow.call.spending_key = caller.key_id
        if _checks_verified(op, caller):  # issue 34: an unconfirmed address does not spend
            await require_verified(uow.session, caller.customer_id)
        result = await op.handler(Context(uow, caller, platform), data)
        check_guards(
            uow, caller, result, max_total_cents, op_name=op.name, spends=op.effect == Effect.SPENDS_MONEY
        )
        if activity.noted(op, caller):  # who did what on the account (domains/team/activity.py)
            await activity.note(uow.session, op, caller, data)
        if store:
            # dumped once, straight to JSON text (pydantic-core; was a dict, then json.dumps)
            response = result.model_dump_json() if isinstance(result, BaseModel) else "{}"
            if isinstance(result, BaseModel) and _dump_is_by_alias(type(result)):
                _DUMPED.set((result, response))  # the REST door's body: the same text (dumped_json)
            await idempotency.store_and_commit(uow, caller.customer_id, op.name, key, response, final=True)
        else:
            await uow.commit(final=True)
        return result
