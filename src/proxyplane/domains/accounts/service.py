"""Customer accounts: create, look up, profile."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.core.errors import Conflict, NotFound, ValidationFailed
from proxyplane.core.security import hash_password
from proxyplane.storage.models import Customer
from proxyplane.storage.repos import customers as customer_rows

# characters an address may not carry here: mail headers would read them as syntax (aiosmtplib refuses them),
# and control characters; core/bounds.EMAIL states the same rule in the schemas
_UNSENDABLE = set('<>()[]\\,;:"') | {chr(c) for c in range(32)} | {chr(127)}


def normalise_email(email: str) -> str:
    email = email.strip().lower()
    local, sep, domain = email.partition("@")
    odd = " " in email or len(email) > 320 or bool(_UNSENDABLE & set(email))
    if not sep or not local or "." not in domain or odd:
        raise ValidationFailed(f"invalid email address: {email!r}", field="email")
    return email


def check_password(password: str) -> None:
    if len(password) < 8:
        raise ValidationFailed("password must be at least 8 characters", field="password")
    if len(password) > 200:
        raise ValidationFailed("password must be at most 200 characters", field="password")


async def create_customer(
    session: AsyncSession, email: str, password: str, name: str = "", *, verified: bool = True
) -> Customer:
    """`verified`: the address counts as confirmed (accounts the operator makes); a dashboard sign-up
    passes False and gets a verification link (domains/accounts/recovery.py)."""
    email = normalise_email(email)
    check_password(password)
    customer = Customer(email=email, password_hash=hash_password(password), name=name.strip())
    customer.email_verified_at = utcnow() if verified else None
    try:
        await customer_rows.add_customer(session, customer)
    except IntegrityError as exc:
        raise Conflict(f"an account with email {email} already exists") from exc
    return customer


async def get_customer(session: AsyncSession, customer_id: int) -> Customer:
    customer = await session.get(Customer, customer_id)
    if customer is None:
        raise NotFound("customer not found")
    return customer


async def find_by_email(session: AsyncSession, email: str) -> Customer | None:
    email = email.strip().lower()
    return (
        await session.execute(select(Customer).where(func.lower(Customer.email) == email))
    ).scalar_one_or_none()


async def require_by_email(session: AsyncSession, email: str) -> Customer:
    customer = await find_by_email(session, email)
    if customer is None:
        raise NotFound(f"no customer with email {email.strip().lower()}")
    return customer


async def set_kyc_verified(session: AsyncSession, customer: Customer) -> None:
    if customer.kyc_verified_at is None:
        customer.kyc_verified_at = utcnow()
    await session.flush()


async def set_partner_discount(session: AsyncSession, customer: Customer, percent: int) -> None:
    if not 0 <= percent <= 100:
        raise ValidationFailed("partner discount must be between 0 and 100 percent", field="percent")
    customer.partner_discount_percent = percent
    await session.flush()
