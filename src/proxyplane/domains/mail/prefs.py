"""Changing a customer's email notification choices (notification_settings.email_off), and the one-click
unsubscribe operation (RFC 8058: a POST to the List-Unsubscribe address turns that kind off)."""

from __future__ import annotations

from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.domains.mail.notify import KINDS, read_unsubscribe
from proxyplane.ops import Auth, Context, Effect, Operation, register, web_op
from proxyplane.storage.models import Customer
from proxyplane.storage.repos.notification_settings import settings_row as settings_row


async def set_email(session: AsyncSession, customer_id: int, choices: dict[str, bool]) -> set[str]:
    """Turn kinds on (True) or off (False); returns the kinds now off."""
    row = await settings_row(session, customer_id)
    off = set(row.email_off or [])
    for kind, on in choices.items():
        if kind in KINDS:
            (off.discard if on else off.add)(kind)
    row.email_off = sorted(off)
    row.updated_at = utcnow()
    await session.flush()
    return off


class Unsubscribe(BaseModel):
    token: str = Field(max_length=200)


class Unsubscribed(BaseModel):
    outcome: str = Field(description="ok | unknown")
    kind: str = ""
    description: str = ""
    email: str = ""


async def read_token(ctx: Context, data: Unsubscribe) -> Unsubscribed:
    found = read_unsubscribe(ctx.platform.secret_key, data.token)
    if found is None or (customer := await ctx.session.get(Customer, found[0])) is None:
        return Unsubscribed(outcome="unknown")
    return Unsubscribed(outcome="ok", kind=found[1], description=KINDS[found[1]], email=customer.email)


async def unsubscribe(ctx: Context, data: Unsubscribe) -> Unsubscribed:
    shown = await read_token(ctx, data)
    if shown.outcome == "ok":
        found = read_unsubscribe(ctx.platform.secret_key, data.token)
        assert found is not None
        await set_email(ctx.session, found[0], {found[1]: False})
    return shown


def _op(name: str, handler: object, effect: Effect) -> Operation:
    return web_op(name, handler, Unsubscribe, Unsubscribed, effect=effect, auth=Auth.NONE)


READ_UNSUBSCRIBE = _op("read_unsubscribe", read_token, Effect.READ)
UNSUBSCRIBE = _op("unsubscribe", unsubscribe, Effect.WRITE)
register(READ_UNSUBSCRIBE, UNSUBSCRIBE)
