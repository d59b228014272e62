"""Notification settings: the balance-low threshold and which notifications come by email
(GET/PATCH /customer/me/notifications; the email part: issue 34, domains/mail/notify.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from proxyplane.core.bounds import documented
from proxyplane.core.clock import utcnow
from proxyplane.core.scopes import Scope
from proxyplane.domains.events.service import balance_threshold
from proxyplane.domains.mail.notify import KINDS, email_off
from proxyplane.domains.mail.prefs import set_email, settings_row
from proxyplane.ops import Context, Effect, Operation, register

EMAIL_HELP = "notification kind -> sent by email (true) or not; kinds: " + ", ".join(
    f"{k} ({v})" for k, v in KINDS.items()
)


class Notifications(BaseModel):
    balance_low_threshold_cents: int | None = Field(
        description="wallet.balance_low is emitted when a debit takes the balance below this; null = off"
    )
    email: dict[str, bool] = Field(default_factory=dict, description=EMAIL_HELP)


class NotificationsUpdate(BaseModel):
    """Either part or both; a field left out keeps its value."""

    model_config = ConfigDict(extra="forbid")
    balance_low_threshold_cents: int | None = Field(default=None, ge=1, le=100_000_000)
    email: dict[str, bool] | None = Field(
        default=None,
        description=EMAIL_HELP,
        json_schema_extra=documented(propertyNames={"enum": list(KINDS)}),
    )

    @field_validator("email")
    @classmethod
    def _kinds(cls, value: dict[str, bool] | None) -> dict[str, bool] | None:
        unknown = sorted(set(value or {}) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown notification kind(s): {', '.join(unknown)}; known: {', '.join(KINDS)}")
        return value


async def _current(ctx: Context) -> Notifications:
    off = await email_off(ctx.session, ctx.customer_id)
    return Notifications(
        balance_low_threshold_cents=await balance_threshold(ctx.session, ctx.customer_id),
        email={kind: kind not in off for kind in KINDS},
    )


async def get_notifications(ctx: Context, _: None) -> Notifications:
    return await _current(ctx)


async def update_notifications(ctx: Context, data: NotificationsUpdate) -> Notifications:
    if "balance_low_threshold_cents" in data.model_fields_set:
        row = await settings_row(ctx.session, ctx.customer_id)
        row.balance_low_threshold_cents = data.balance_low_threshold_cents
        row.updated_at = utcnow()
        await ctx.session.flush()
    if data.email:
        await set_email(ctx.session, ctx.customer_id, data.email)
    return await _current(ctx)


GET_NOTIFICATIONS = Operation(
    name="get_notification_settings",
    summary="Your notification settings: the balance-low threshold and which notifications come by email.",
    method="GET",
    path="/customer/me/notifications",
    handler=get_notifications,
    output=Notifications,
    scopes=frozenset({Scope.customer_read}),
    tags=("profile",),
)
UPDATE_NOTIFICATIONS = Operation(
    name="update_notification_settings",
    summary="Set the balance-low threshold in cents (null turns the wallet.balance_low event off) and/or "
    "turn email notifications on or off by kind.",
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
