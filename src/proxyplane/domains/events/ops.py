"""Notification settings: the balance-low threshold (GET/PATCH /customer/me/notifications)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from proxyplane.core.clock import utcnow
from proxyplane.core.scopes import Scope
from proxyplane.domains.events.service import balance_threshold
from proxyplane.ops import Context, Effect, Operation, register
from proxyplane.storage.models import NotificationSettings


class Notifications(BaseModel):
    balance_low_threshold_cents: int | None = Field(
        description="wallet.balance_low is emitted when a debit takes the balance below this; null = off"
    )


class NotificationsUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    balance_low_threshold_cents: int | None = Field(ge=1, le=100_000_000)


async def get_notifications(ctx: Context, _: None) -> Notifications:
    return Notifications(balance_low_threshold_cents=await balance_threshold(ctx.session, ctx.customer_id))


async def update_notifications(ctx: Context, data: NotificationsUpdate) -> Notifications:
    row = await ctx.session.get(NotificationSettings, ctx.customer_id)
    if row is None:
        row = NotificationSettings(customer_id=ctx.customer_id)
        ctx.session.add(row)
    row.balance_low_threshold_cents = data.balance_low_threshold_cents
    row.updated_at = utcnow()
    await ctx.session.flush()
    return Notifications(balance_low_threshold_cents=row.balance_low_threshold_cents)


GET_NOTIFICATIONS = Operation(
    name="get_notification_settings",
    summary="Your notification settings (balance-low threshold).",
    method="GET",
    path="/customer/me/notifications",
    handler=get_notifications,
    output=Notifications,
    scopes=frozenset({Scope.customer_read}),
    tags=("profile",),
)
UPDATE_NOTIFICATIONS = Operation(
    name="update_notification_settings",
    summary="Set the balance-low threshold in cents (null turns the wallet.balance_low event off).",
    method="PATCH",
    path="/customer/me/notifications",
    handler=update_notifications,
    input=NotificationsUpdate,
    output=Notifications,
    scopes=frozenset({Scope.customer_write}),
    effect=Effect.WRITE,
    tags=("profile",),
)
register(GET_NOTIFICATIONS, UPDATE_NOTIFICATIONS)
