"""Customer notifications by email: the kinds a customer can turn off, which event types feed each kind,
the message for an event, the one-click unsubscribe token (RFC 8058) and reading the choices.

Events reach email through the notification pass (jobs/mail_pass.py), never inline: the order path stays
as it is, and a message per event is queued once (dedupe key `event:<id>`) however often the pass runs."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.events.catalogue import EVENT_TYPES
from proxyplane.domains.mail.compose import Mail, render
from proxyplane.storage.models import NotificationSettings

# the kinds, in the order the settings show them: name -> what the customer reads
KINDS: dict[str, str] = {
    "order_paid": "An order was paid (its invoice is issued)",
    "service_expiring": "A service ends in 3 days and in 1 day (not renewing, or the balance is short)",
    "renewal_failed": "An automatic renewal failed (with the amount short)",
    "balance_low": "The wallet balance went below your threshold",
    "usage_limit": "A traffic limit reached 80 % and 100 %",
    "ticket_replied": "Support answered one of your tickets",
    "new_sign_in": "A sign-in from an address not seen before",
    "api_key_created": "An API key was created",
}
EVENT_KINDS = {
    "order.paid": "order_paid",
    "service.renewal_failed": "renewal_failed",
    "wallet.balance_low": "balance_low",
    "ticket.replied": "ticket_replied",
    "api_key.created": "api_key_created",
}


LIMIT_SUFFIXES = (".usage_80", ".usage_100", ".quota_80", ".quota_100")


def kind_of(event_type: str) -> str | None:
    """The notification kind an event type feeds, if any. Usage-limit events are matched by name, so the
    quota events (`service.quota_80/100`, `subuser.usage_80/100`, any `quota.*`) are notified as they
    come."""
    if event_type in EVENT_KINDS:
        return EVENT_KINDS[event_type]
    if event_type.startswith("quota.") or event_type.endswith(LIMIT_SUFFIXES):
        return "usage_limit"
    return None


def notified_types() -> list[str]:
    return sorted(t for t in EVENT_TYPES if kind_of(t) is not None)


async def email_off(session: AsyncSession, customer_id: int) -> set[str]:
    row = await session.get(NotificationSettings, customer_id)
    return set(row.email_off or []) if row is not None else set()


async def email_off_many(session: AsyncSession, customer_ids: set[int]) -> dict[int, set[str]]:
    if not customer_ids:
        return {}
    rows = await session.execute(
        select(NotificationSettings.customer_id, NotificationSettings.email_off).where(
            NotificationSettings.customer_id.in_(sorted(customer_ids))
        )
    )
    return {int(cid): set(off or []) for cid, off in rows}


# one-click unsubscribe: a signed (customer, kind) pair; no state, valid as long as the server key


def _signature(secret_key: str, customer_id: int, kind: str) -> str:
    mac = hmac.new(secret_key.encode(), f"unsubscribe:{customer_id}:{kind}".encode(), hashlib.sha256)
    return mac.hexdigest()[:32]


def unsubscribe_token(secret_key: str, customer_id: int, kind: str) -> str:
    return f"{customer_id}.{kind}.{_signature(secret_key, customer_id, kind)}"


def read_unsubscribe(secret_key: str, token: str) -> tuple[int, str] | None:
    """(customer_id, kind) of a genuine token, else None."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in KINDS:
        return None
    customer_id, kind = int(parts[0]), parts[1]
    if not hmac.compare_digest(parts[2], _signature(secret_key, customer_id, kind)):
        return None
    return customer_id, kind


@dataclass(frozen=True)
class Links:
    """What a notification needs from the platform: the dashboard's address and the signing key."""

    base_url: str
    secret_key: str


def money(cents: Any) -> str:
    value = int(cents or 0)
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value) // 100:,}.{abs(value) % 100:02d}"


def day(value: str | datetime | None) -> str:
    if value is None or value == "":
        return ""
    at = datetime.fromisoformat(value) if isinstance(value, str) else value
    return at.strftime("%Y-%m-%d %H:%M UTC")


def notification(
    links: Links,
    customer_id: int,
    to: str,
    kind: str,
    subject: str,
    lines: list[str],
    path: str,
    label: str,
    member: tuple[str, str] | None = None,
) -> Mail:
    """A notification: the dashboard link it is about, the footer saying why it came, and the
    List-Unsubscribe headers (RFC 2369 + RFC 8058 one-click POST) for this kind. `member`: (the account's
    address, the role) when it goes to a team member (issue 34.5); `customer_id` is then the member's own
    sign-in, whose choice the unsubscribe link changes."""
    url = f"{links.base_url}/unsubscribe/{unsubscribe_token(links.secret_key, customer_id, kind)}"
    footer = [
        f"You get this email because “{KINDS[kind]}” is on in your notification settings: "
        f"{links.base_url}/notifications"
    ]
    if member is not None:
        footer = [
            f"You get this email as {member[1]} of the ProxyPlane account {member[0]}, because "
            f"“{KINDS[kind]}” is on in the notification settings of your own sign-in "
            "(the link below turns it off for you)."
        ]
    headers = {"List-Unsubscribe": f"<{url}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    return render(
        "notice",
        kind,
        to,
        subject,
        lines=lines,
        action_url=f"{links.base_url}{path}",
        action_label=label,
        footer=footer,
        unsubscribe_url=url,
        headers=headers,
    )


def for_event(
    links: Links,
    customer_id: int,
    to: str,
    event_type: str,
    data: dict[str, Any],
    member: tuple[str, str] | None = None,
) -> Mail | None:
    """The message for one event, or None when the type is not notified by email (`member`: as in
    `notification`)."""
    kind = kind_of(event_type)
    if kind is None:
        return None
    notification = partial(_notification, member=member)
    number = data.get("number", "")
    service = f"/services/{data['service_id']}" if data.get("service_id") else "/services"
    if kind == "order_paid":
        return notification(
            links,
            customer_id,
            to,
            kind,
            f"Order #{number} paid: your invoice is issued",
            [
                f"We received {money(data.get('total_cents'))} for order #{number} "
                f"({data.get('product_kind', '')}, {data.get('period_months', '')} month(s)).",
                "Your service is being set up; its invoice is in your dashboard under Invoices.",
            ],
            service,
            "See the service",
        )
    if kind == "renewal_failed":
        required, balance = int(data.get("required_cents") or 0), int(data.get("balance_cents") or 0)
        return notification(
            links,
            customer_id,
            to,
            kind,
            f"Automatic renewal of service #{number} failed: {money(required - balance)} short",
            [
                f"Renewing service #{number} costs {money(required)}; your wallet balance is "
                f"{money(balance)}, {money(required - balance)} short.",
                f"Top up before {day(data.get('suspends_at'))} to keep the service running; "
                "the renewal is tried again automatically.",
            ],
            "/wallet",
            "Top up your wallet",
        )
    if kind == "balance_low":
        return notification(
            links,
            customer_id,
            to,
            kind,
            f"Your balance is {money(data.get('balance_cents'))}",
            [
                f"Your wallet balance went below your threshold of {money(data.get('threshold_cents'))}: "
                f"it is {money(data.get('balance_cents'))} now.",
            ],
            "/wallet",
            "Top up your wallet",
        )
    if kind == "ticket_replied":
        return notification(
            links,
            customer_id,
            to,
            kind,
            f"Support answered: {data.get('subject', '')}",
            ["Support replied to your ticket:", str(data.get("message", ""))[:2000]],
            f"/tickets/{data.get('ticket_id', '')}",
            "Open the ticket",
        )
    if kind == "api_key_created":
        scopes = ", ".join(data.get("scopes") or []) or "none"
        return notification(
            links,
            customer_id,
            to,
            kind,
            f"API key “{data.get('name', '')}” created",
            [
                f"A new API key “{data.get('name', '')}” ({data.get('prefix', '')}…) was created with the "
                f"scopes: {scopes}.",
                "If this was not you, revoke it on the API keys page and change your password.",
            ],
            "/keys",
            "See your API keys",
        )
    description = EVENT_TYPES.get(event_type, event_type)
    return notification(
        links,
        customer_id,
        to,
        kind,
        description.rstrip("."),
        [description, *(f"{k}: {v}" for k, v in sorted(data.items()) if not isinstance(v, dict | list))],
        service,
        "Open the dashboard",
    )


_notification = notification  # for_event's calls, bound to its `member`
