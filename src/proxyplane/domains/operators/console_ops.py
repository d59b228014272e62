"""The console's sign-in steps (issue 33) as registered operations of the "console" door only: password,
TOTP enrolment at the first sign-in (QR + the operator's own password + recovery codes shown once), the
code (or a recovery code) at every later sign-in, sign-out. No role yet, so no permission: each step is
throttled per email and client address and leaves its audit row itself, a refused one too (outcome
"wrong": a bad password or code of a known operator; "locked": a locked operator's right password). An
unknown email and a throttled step (nothing was checked) leave none: the throttle counts them, and an
anonymous flood must not grow the append-only log. The console adapter only reads forms, sets the cookie
and renders."""

from __future__ import annotations

from pydantic import BaseModel, Field

from proxyplane.core import totp
from proxyplane.core.errors import Unauthorized
from proxyplane.domains.operators import service as operators
from proxyplane.ops import Auth, Context, Effect, Operation, register
from proxyplane.storage.models.operators import Operator, OperatorSession
from proxyplane.storage.repos import operators as repo

CONSOLE = frozenset({"console"})


class SignIn(BaseModel):
    email: str = Field(max_length=320)
    password: str = Field(max_length=500)


class Step(BaseModel):
    session_id: str = Field(max_length=64)


class Code(Step):
    code: str = Field(max_length=40)


class Enrol(Code):
    new_password: str = Field(max_length=500)


class Signed(BaseModel):
    outcome: str = Field(description="ok | throttled | wrong")
    token: str = ""
    stage: str = ""


class Enrolment(BaseModel):
    uri: str
    qr_svg: str


class Enrolled(BaseModel):
    outcome: str
    recovery_codes: list[str] = []


async def _audit(ctx: Context, operator: Operator, action: str, outcome: str) -> None:
    await repo.append_audit(
        ctx.session,
        operator_id=operator.id,
        actor=operator.email,
        role=operator.role,
        door="console",
        action=action,
        target=f"operator:{operator.email}",
        before=None,
        after={"outcome": outcome},
        detail=None,
        client_ip=ctx.caller.client_ip,
        outcome=outcome,
    )


async def _session(ctx: Context, session_id: str) -> tuple[OperatorSession, Operator]:
    row = await ctx.session.get(OperatorSession, session_id)
    operator = await ctx.session.get(Operator, row.operator_id) if row is not None else None
    if row is None or operator is None or row.revoked_at is not None or operator.status != "active":
        raise Unauthorized("sign in again")
    return row, operator


async def sign_in(ctx: Context, data: SignIn) -> Signed:
    """A wrong password is an answer, not an error: its failure record is committed (throttling)."""
    ip = ctx.caller.client_ip
    if await operators.throttled(ctx.session, data.email, ip):
        return Signed(outcome="throttled")
    operator, outcome = await operators.check_password(ctx.session, data.email, data.password, ip)
    if operator is None or outcome != "ok":
        if operator is not None:  # a wrong password, or a locked operator: recorded, the answer is the same
            await _audit(ctx, operator, "console_password", outcome)
        return Signed(outcome="wrong")
    row, token = await operators.open_session(ctx.session, operator, ip, ctx.caller.user_agent)
    await _audit(ctx, operator, "console_password", "ok")
    return Signed(outcome="ok", token=token, stage=row.stage)


async def enrolment(ctx: Context, data: Step) -> Enrolment:
    row, operator = await _session(ctx, data.session_id)
    uri = await operators.start_enrolment(ctx.session, ctx.platform.secrets, row, operator)
    return Enrolment(uri=uri, qr_svg=totp.qr_svg(uri))


async def enrol(ctx: Context, data: Enrol) -> Enrolled:
    row, operator = await _session(ctx, data.session_id)
    if await operators.code_throttled(ctx.session, operator):
        return Enrolled(outcome="throttled")
    box = ctx.platform.secrets
    codes = await operators.finish_enrolment(ctx.session, box, row, operator, data.code, data.new_password)
    if codes is None:
        await _audit(ctx, operator, "console_totp_enrolled", "wrong")
        return Enrolled(outcome="wrong")
    await _audit(ctx, operator, "console_totp_enrolled", "ok")
    return Enrolled(outcome="ok", recovery_codes=codes)


async def second_factor(ctx: Context, data: Code) -> Signed:
    row, operator = await _session(ctx, data.session_id)
    if await operators.code_throttled(ctx.session, operator):
        return Signed(outcome="throttled")
    if not await operators.second_factor(ctx.session, ctx.platform.secrets, row, operator, data.code):
        await _audit(ctx, operator, "console_sign_in", "wrong")  # a bad second factor
        return Signed(outcome="wrong")
    await _audit(ctx, operator, "console_sign_in", "ok")
    return Signed(outcome="ok", stage="full")


async def sign_out(ctx: Context, data: Step) -> Signed:
    row, operator = await _session(ctx, data.session_id)
    await repo.revoke_sessions(ctx.session, operator.id, only=row.id)
    await _audit(ctx, operator, "console_sign_out", "ok")
    return Signed(outcome="ok")


def _op(name: str, handler: object, input: type[BaseModel], output: type[BaseModel]) -> Operation:
    return Operation(
        name=f"console_{name}",
        summary=f"operator console: {name.replace('_', ' ')}",
        method="POST",
        path=f"/{name}",
        handler=handler,  # type: ignore[arg-type]
        input=input,
        output=output,
        effect=Effect.WRITE,
        auth=Auth.NONE,
        mcp=False,
        doors=CONSOLE,
    )


SIGN_IN = _op("sign_in", sign_in, SignIn, Signed)
ENROLMENT = _op("enrolment", enrolment, Step, Enrolment)
ENROL = _op("enrol", enrol, Enrol, Enrolled)
SECOND_FACTOR = _op("second_factor", second_factor, Code, Signed)
SIGN_OUT = _op("sign_out", sign_out, Step, Signed)
register(SIGN_IN, ENROLMENT, ENROL, SECOND_FACTOR, SIGN_OUT)
