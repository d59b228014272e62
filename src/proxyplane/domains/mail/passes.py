"""What the notification pass queues (jobs/mail_pass.py owns the transactions; nothing here commits):
one message per notified event, and the expiry reminders 3 days and 1 day before a service's term ends.
Each has a dedupe key, so any number of passes (and of workers) queues it once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.domains.mail import notify
from proxyplane.domains.mail.outbox import queue
from proxyplane.domains.renewals.service import price_of_term
from proxyplane.domains.team.roles import kinds_of
from proxyplane.domains.wallet.service import balance
from proxyplane.storage.models import Customer, Event, Service
from proxyplane.storage.models.mail import EmailMessage
from proxyplane.storage.repos.team import mailed_members

REMINDERS = ((timedelta(days=1), "1d", "1 day"), (timedelta(days=3), "3d", "3 days"))


async def _recipients(session: AsyncSession, customer_ids: set[int], closed: set[int]) -> dict[int, str]:
    """The active customers' addresses; an account handed over to a member (issue 34.5) is named here but
    not mailed at its own address (`closed`): its sign-in is closed, and its holder, an owner member, gets
    every kind as one."""
    if not customer_ids:
        return {}
    rows = await session.execute(
        select(Customer.id, Customer.email, Customer.holder_member_id).where(
            Customer.id.in_(sorted(customer_ids)), Customer.status == "active"
        )
    )
    found = {}
    for cid, email, holder in rows:
        found[int(cid)] = str(email)
        if holder is not None:
            closed.add(int(cid))
    return found


async def _queued(session: AsyncSession, keys: list[str]) -> set[str]:
    if not keys:
        return set()
    rows = await session.execute(select(EmailMessage.dedupe_key).where(EmailMessage.dedupe_key.in_(keys)))
    return {str(k) for k in rows.scalars()}


async def queue_events(
    session: AsyncSession, events: Sequence[Event], links: notify.Links, sender: str
) -> int:
    """A message per event whose kind the customer has on, and one per team member whose role gets that
    kind and who has it on (issue 34.5); returns how many were queued now."""
    customers = {e.customer_id for e in events}
    closed: set[int] = set()
    to = await _recipients(session, customers, closed)
    team = await mailed_members(session, customers)
    people = {person for found in team.values() for _, person, _, _ in found}
    off = await notify.email_off_many(session, customers | people)
    keys = [f"event:{e.id}" for e in events]
    keys += [f"event:{e.id}:m{m[0]}" for e in events for m in team.get(e.customer_id, [])]
    done = await _queued(session, keys)
    count = 0
    for event in events:
        key = f"event:{event.id}"
        kind = notify.kind_of(event.type)
        if kind is None or event.customer_id not in to:
            continue
        if (
            key not in done
            and kind not in off.get(event.customer_id, set())
            and event.customer_id not in closed
        ):
            mail = notify.for_event(links, event.customer_id, to[event.customer_id], event.type, event.data)
            if mail is not None and await queue(
                session, mail, sender=sender, customer_id=event.customer_id, dedupe_key=key
            ):
                count += 1
        for member_id, person, address, role in team.get(event.customer_id, []):
            mine = f"{key}:m{member_id}"
            if mine in done or kind not in kinds_of(role) or kind in off.get(person, set()):
                continue
            on = (to[event.customer_id], role)
            mail = notify.for_event(links, person, address, event.type, event.data, member=on)
            if mail is not None and await queue(
                session, mail, sender=sender, customer_id=event.customer_id, dedupe_key=mine
            ):
                count += 1
    return count


def reminder_due(end: datetime, now: datetime) -> tuple[str, str] | None:
    """(mark, words) of the reminder due for a term ending at `end`: the nearest of 1 day / 3 days."""
    for within, mark, words in REMINDERS:
        if now < end <= now + within:
            return mark, words
    return None


async def remind_expiring(session: AsyncSession, now: datetime, links: notify.Links, sender: str) -> int:
    """Reminders for active services ending within 3 days: those that will not renew (auto-renew off,
    or on with a wallet balance short of the renewal's price). One per term and mark (3d, 1d); a term
    first seen inside 1 day gets the 1-day one only."""
    horizon = now + REMINDERS[-1][0]
    services = (
        await session.execute(
            select(Service).where(
                Service.status == "active",
                Service.current_period_end > now,
                Service.current_period_end <= horizon,
            )
        )
    ).scalars()
    due: list[tuple[Service, str, str, str]] = []
    for svc in services:
        assert svc.current_period_end is not None
        mark = reminder_due(svc.current_period_end, now)
        if mark is not None:
            key = f"expiry:{svc.service_id}:{svc.current_period_end.isoformat()}:{mark[0]}"
            due.append((svc, key, *mark))
    customers = {svc.customer_id for svc, *_ in due}
    team = await mailed_members(session, customers)
    done = await _queued(
        session,
        [key for _, key, _, _ in due]
        + [f"{k}:m{m[0]}" for svc, k, _, _ in due for m in team.get(svc.customer_id, [])],
    )
    closed: set[int] = set()
    to = await _recipients(session, customers, closed)
    people = {person for found in team.values() for _, person, _, _ in found}
    off = await notify.email_off_many(session, customers | people)
    count = 0
    for svc, key, _, words in due:
        if svc.customer_id not in to:
            continue
        # the account's address, then each member whose role gets reminders (issue 34.5)
        wanted: list[tuple[str, int, str, tuple[str, str] | None]] = [
            (key, svc.customer_id, to[svc.customer_id], None)
        ] + [
            (f"{key}:m{member_id}", person, address, (to[svc.customer_id], role))
            for member_id, person, address, role in team.get(svc.customer_id, [])
            if "service_expiring" in kinds_of(role)
        ]
        if svc.customer_id in closed:
            wanted = wanted[1:]
        wanted = [w for w in wanted if w[0] not in done and "service_expiring" not in off.get(w[1], set())]
        if not wanted:
            continue
        lines = [f"Service #{svc.number} ({svc.product_kind}) ends on {notify.day(svc.current_period_end)}."]
        if svc.auto_renew:
            price, have = await price_of_term(session, svc), await balance(session, svc.customer_id)
            if have >= price:
                continue  # it renews from the wallet
            lines.append(
                f"It renews automatically for {notify.money(price)}, but your balance is "
                f"{notify.money(have)}: top up {notify.money(price - have)} to keep it."
            )
        else:
            lines.append("It does not renew automatically: renew it in the dashboard to keep its IPs.")
        for dedupe, recipient, address, member in wanted:
            mail = notify.notification(
                links,
                recipient,
                address,
                "service_expiring",
                f"Service #{svc.number} ends in {words}",
                lines,
                f"/services/{svc.service_id}",
                "See the service",
                member=member,
            )
            if await queue(session, mail, sender=sender, customer_id=svc.customer_id, dedupe_key=dedupe):
                count += 1
    return count
