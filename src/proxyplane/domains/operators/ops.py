"""The operator's own operations (issue 33), in the one registry: the team (operators, roles, locks, keys),
one's sessions, the overview, customer search and page, suspend / resume / refund a service, the audit
log. Each declares its permission (roles.py); `invoke` checks the caller's role and writes the audit row
of every write in the operation's own unit of work (operator_calls.py)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound
from proxyplane.domains.operators import reports, resellers
from proxyplane.domains.operators import service as operators
from proxyplane.domains.renewals import service as renewals
from proxyplane.domains.services import service as services
from proxyplane.domains.wallet import service as wallet
from proxyplane.ops import OPERATOR, OPERATOR_DOORS, Context, Effect, operator_op, register
from proxyplane.storage.models import Customer, Service
from proxyplane.storage.models.operators import Operator
from proxyplane.storage.repos import operators as repo
from proxyplane.storage.repos import services as service_rows

API = OPERATOR_DOORS - {"console"}


class NewOperator(BaseModel):
    operator_email: str
    role: str


class OperatorRef(BaseModel):
    operator_email: str


class RoleChange(OperatorRef):
    role: str


class NewOperatorKey(OperatorRef):
    name: str = Field(min_length=1, max_length=100)
    role: str


class NoInput(BaseModel):
    pass


class SessionRef(BaseModel):
    session_id: str = Field(min_length=8, max_length=64)


class Search(BaseModel):
    query: str = Field(default="", max_length=200)
    limit: int = Field(default=50, ge=1, le=200)


class CustomerRef(BaseModel):
    customer_id: int


class ServiceRef(BaseModel):
    service_id: uuid.UUID
    reason: str = Field(default="", max_length=300)


class AuditFilter(BaseModel):
    actor: str = ""
    action: str = ""
    target: str = ""
    outcome: str = Field(default="", pattern="^(|ok|refused|wrong|locked)$")
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(default=100, ge=1, le=5000)


def operator_json(o: Any) -> dict[str, Any]:
    return {
        "operator_email": o.email,
        "role": o.role,
        "status": o.status,
        "totp_enrolled": o.totp_secret is not None,
        "created_at": o.created_at.isoformat(),
    }


async def create_operator(ctx: Context, data: NewOperator) -> dict[str, Any]:
    row, password = await operators.create(ctx.session, data.operator_email, data.role)
    base = ctx.platform.settings.public_base_url.rstrip("/")
    ctx.audit["after"] = operator_json(row)  # the one-time password stays out of the audit log
    return {**operator_json(row), "one_time_password": password, "sign_in_url": f"{base}/admin/login"}


async def list_operators(ctx: Context, data: NoInput) -> dict[str, Any]:
    rows = (await ctx.session.execute(select(Operator).order_by(Operator.id))).scalars().all()
    return {"operators": [operator_json(o) for o in rows]}


async def set_role(ctx: Context, data: RoleChange) -> dict[str, Any]:
    target = await operators.require_by_email(ctx.session, data.operator_email)
    ctx.audit["before"] = operator_json(target)
    await operators.set_role(ctx.session, target, data.role)
    return operator_json(target)


async def lock(ctx: Context, data: OperatorRef) -> dict[str, Any]:
    target = await operators.require_by_email(ctx.session, data.operator_email)
    ctx.audit["before"] = operator_json(target)
    await operators.lock(ctx.session, target)
    return operator_json(target)


async def unlock(ctx: Context, data: OperatorRef) -> dict[str, Any]:
    target = await operators.require_by_email(ctx.session, data.operator_email)
    ctx.audit["before"] = operator_json(target)
    await operators.unlock(ctx.session, target)
    return operator_json(target)


async def create_operator_key(ctx: Context, data: NewOperatorKey) -> dict[str, Any]:
    target = await operators.require_by_email(ctx.session, data.operator_email)
    key, raw = await operators.create_key(ctx.session, target, data.name, data.role)
    out = {"key_id": key.id, "name": key.name, "role": key.role, "operator_email": target.email}
    ctx.audit["after"] = out
    return {**out, "secret": raw}


async def my_sessions(ctx: Context, data: NoInput) -> dict[str, Any]:
    if ctx.caller.operator_id is None:
        return {"sessions": []}
    rows = await operators.sessions_of(ctx.session, ctx.caller.operator_id)
    return {
        "sessions": [
            {
                "session_id": r.id,
                "stage": r.stage,
                "client_ip": r.client_ip,
                "user_agent": r.user_agent,
                "created_at": r.created_at.isoformat(),
                "last_seen_at": r.last_seen_at.isoformat(),
            }
            for r in rows
        ]
    }


async def revoke_session(ctx: Context, data: SessionRef) -> dict[str, Any]:
    if ctx.caller.operator_id is None:
        raise NotFound("the command line has no console sessions")
    done = await repo.revoke_sessions(ctx.session, ctx.caller.operator_id, only=data.session_id)
    if not done:
        raise NotFound("no such live session of yours")
    ctx.audit["target"] = f"session:{data.session_id[:12]}"
    return {"revoked": done}


async def overview(ctx: Context, data: NoInput) -> dict[str, Any]:
    return await reports.overview(ctx.session)


async def search(ctx: Context, data: Search) -> dict[str, Any]:
    among = resellers.scope_of(ctx.caller)  # a reseller finds its own customers only
    return {"customers": await reports.search(ctx.session, data.query, data.limit, reseller_id=among)}


async def _customer(ctx: Context, customer_id: int) -> Customer:
    row: Customer | None = await ctx.session.get(Customer, customer_id)
    if row is None:
        raise NotFound(f"no customer {customer_id}")
    return row


async def customer_view(ctx: Context, data: CustomerRef) -> dict[str, Any]:
    c = await _customer(ctx, data.customer_id)
    return await reports.customer_page(ctx.session, c, await wallet.balance(ctx.session, c.id))


async def _service(ctx: Context, service_id: uuid.UUID) -> Service:
    svc = await services.get_by_service_id(ctx.session, service_id)
    if svc is None:
        raise NotFound(f"no service {service_id}")
    ctx.audit.update(target=f"service:{svc.service_id}", before={"status": svc.status})
    return svc


async def _move(ctx: Context, svc: Service, src: str, dst: str) -> dict[str, Any]:
    if not await service_rows.move_status(ctx.session, svc.number, src, dst):
        raise Conflict(f"service {svc.service_id} is {svc.status}, not {src}")
    await ctx.session.refresh(svc)
    sid = svc.service_id
    ctx.uow.after_commit(
        lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid)
    )  # the gateway, at once
    return {"service_id": str(sid), "customer_id": svc.customer_id, "status": svc.status}


async def suspend(ctx: Context, data: ServiceRef) -> dict[str, Any]:
    """Stop serving an active service now (IPs kept); the gateway refuses it at once."""
    return await _move(ctx, await _service(ctx, data.service_id), "active", "suspended")


async def resume(ctx: Context, data: ServiceRef) -> dict[str, Any]:
    """Serve a suspended service again while its paid term runs."""
    svc = await _service(ctx, data.service_id)
    if svc.current_period_end is None or svc.current_period_end <= utcnow():
        raise Conflict(f"service {svc.service_id}'s term is over: the customer renews it (resume_service)")
    return await _move(ctx, svc, "suspended", "active")


async def refund(ctx: Context, data: ServiceRef) -> dict[str, Any]:
    """Cancel a service now and refund its unused paid time (and its add-ons') to the wallet, as the
    customer's own cancel does."""
    svc = await _service(ctx, data.service_id)
    before = await wallet.balance(ctx.session, svc.customer_id)
    ctx.audit["before"] = {"status": svc.status, "balance_cents": before}
    cents = await services.cancel(ctx.session, svc)
    if not cents and svc.status != "cancelled":
        raise Conflict(f"service {svc.service_id} is {svc.status}: nothing to refund")
    cents += await renewals.after_cancel(ctx.session, svc, cents)
    sid = svc.service_id
    ctx.uow.after_commit(lambda: ctx.platform.emit(services.ENTITLEMENTS_CHANGED, sid))
    return {
        "service_id": str(sid),
        "customer_id": svc.customer_id,
        "status": svc.status,
        "refunded_cents": cents,
        "balance_cents": await wallet.balance(ctx.session, svc.customer_id),
    }


async def nodes(ctx: Context, data: NoInput) -> dict[str, Any]:
    return await reports.nodes(ctx.session)


async def audit_list(ctx: Context, data: AuditFilter) -> dict[str, Any]:
    fields = data.model_dump()
    return {"entries": await reports.audit(ctx.session, **fields)}


_op = operator_op
R = Effect.READ
TEAM = "operators.manage"
OPERATOR_CREATE = _op("operator_create", create_operator, NewOperator, permission=TEAM, doors=API)
OPERATOR_LIST = _op("operator_list", list_operators, NoInput, R, permission=TEAM, doors=API)
OPERATOR_ROLE = _op("operator_set_role", set_role, RoleChange, permission=TEAM, doors=API)
OPERATOR_LOCK = _op("operator_lock", lock, OperatorRef, permission=TEAM, doors=API)
OPERATOR_UNLOCK = _op("operator_unlock", unlock, OperatorRef, permission=TEAM, doors=API)
# an operator key's secret is printed on the host only
OPERATOR_KEY = _op(
    "operator_key_create", create_operator_key, NewOperatorKey, permission=TEAM, doors=OPERATOR
)
SELF = "account.self"  # one's own sessions: a reseller's too
SESSIONS = _op("my_sessions", my_sessions, NoInput, R, permission=SELF, doors=OPERATOR_DOORS, reseller=SELF)
SESSION_REVOKE = _op(
    "session_revoke", revoke_session, SessionRef, permission=SELF, doors=OPERATOR_DOORS, reseller=SELF
)
OVERVIEW = _op("overview", overview, NoInput, R, permission="reports.read", doors=OPERATOR_DOORS)
OWN = "reseller.customers"  # a reseller: its own customers only (resellers.py)
SEARCH = _op(
    "customer_search", search, Search, R, permission="customers.read", doors=OPERATOR_DOORS, reseller=OWN
)
CUSTOMER = _op(
    "customer_view",
    customer_view,
    CustomerRef,
    R,
    permission="customers.read",
    doors=OPERATOR_DOORS,
    reseller=OWN,
    bound_by="customer_id",
)
SUSPEND = _op(
    "service_suspend",
    suspend,
    ServiceRef,
    permission="services.suspend",
    doors=OPERATOR_DOORS,
    reseller=OWN,
    bound_by="service_id",
)
RESUME = _op(
    "service_resume",
    resume,
    ServiceRef,
    permission="services.suspend",
    doors=OPERATOR_DOORS,
    reseller=OWN,
    bound_by="service_id",
)
REFUND = _op("service_refund", refund, ServiceRef, permission="wallet.credit", doors=OPERATOR_DOORS)
AUDIT = _op("audit_list", audit_list, AuditFilter, R, permission="audit.read", doors=OPERATOR_DOORS)
register(OPERATOR_CREATE, OPERATOR_LIST, OPERATOR_ROLE, OPERATOR_LOCK, OPERATOR_UNLOCK, OPERATOR_KEY)
NODES = _op("nodes", nodes, NoInput, R, permission="nodes.read", doors=OPERATOR_DOORS)
register(SESSIONS, SESSION_REVOKE, OVERVIEW, SEARCH, CUSTOMER, SUSPEND, RESUME, REFUND, AUDIT, NODES)
