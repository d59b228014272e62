"""Profile operations: GET /customer/me, PATCH /customer/me (with the invoices' billing details)."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from proxyplane.core.bounds import documented
from proxyplane.core.scopes import Scope
from proxyplane.core.text_input import Label
from proxyplane.domains.accounts.billing import TAX_ID, get_billing, set_billing
from proxyplane.domains.accounts.service import get_customer
from proxyplane.ops import Context, Effect, Operation, register

PHONE = re.compile(r"^\+?[0-9 ()\-.]{4,30}$")


class Profile(BaseModel):
    customer_id: int
    email: str
    name: str
    phone: str
    kyc_verified: bool
    partner_discount_percent: int
    status: str
    created_at: datetime
    billing_company: str = Field(description="company name printed on invoices; empty: the account name")
    billing_address: str = Field(description="postal address printed on invoices, lines separated by \\n")
    billing_vat_id: str = Field(description="VAT / tax id printed on invoices")


class ProfileUpdate(BaseModel):
    """Name, phone and/or the invoices' billing details (company, address, VAT id; "" clears one). The
    email address cannot be changed (an `email` field is refused with 422)."""

    model_config = ConfigDict(extra="forbid")
    name: Label | None = Field(default=None, min_length=1, max_length=200)
    phone: str | None = Field(
        default=None, max_length=30, json_schema_extra=documented(pattern=r"^$|^\+?[0-9 ()\-.]{4,30}$")
    )
    billing_company: Label | None = Field(default=None, max_length=200)
    billing_address: str | None = Field(default=None, max_length=500, description="lines separated by \\n")
    billing_vat_id: str | None = Field(
        default=None,
        max_length=40,
        description="VAT / tax id, e.g. DE123456789; letters, digits, . - / space",
        json_schema_extra=documented(pattern=r"^\s*$|^\s*[A-Za-z0-9][A-Za-z0-9 .\-/]{1,39}\s*$"),
    )

    @field_validator("billing_vat_id")
    @classmethod
    def _vat_id(cls, value: str | None) -> str | None:
        if value is not None and value.strip() and not TAX_ID.match(value.strip()):
            raise ValueError("billing_vat_id must be 2-40 letters, digits, spaces, dots, dashes or slashes")
        return value

    @field_validator("phone")
    @classmethod
    def _phone(cls, value: str | None) -> str | None:
        if value is not None and value != "" and not PHONE.match(value):
            raise ValueError("phone must be digits with an optional leading +, spaces, dashes or brackets")
        return value


async def _profile(ctx: Context, customer_id: int) -> Profile:
    c = await get_customer(ctx.session, customer_id)
    billing = await get_billing(ctx.session, customer_id)
    return Profile(
        customer_id=c.id,
        email=c.email,
        name=c.name,
        phone=c.phone,
        kyc_verified=c.kyc_verified_at is not None,
        partner_discount_percent=c.partner_discount_percent,
        status=c.status,
        created_at=c.created_at,
        billing_company=billing.company,
        billing_address=billing.address,
        billing_vat_id=billing.vat_id,
    )


async def get_profile(ctx: Context, _: None) -> Profile:
    return await _profile(ctx, ctx.customer_id)


async def update_profile(ctx: Context, data: ProfileUpdate) -> Profile:
    c = await get_customer(ctx.session, ctx.customer_id)
    if data.name is not None:
        c.name = data.name.strip()
    if data.phone is not None:
        c.phone = data.phone.strip()
    details = (data.billing_company, data.billing_address, data.billing_vat_id)
    if any(v is not None for v in details):
        await set_billing(
            ctx.session,
            c.id,
            company=data.billing_company,
            address=data.billing_address,
            vat_id=data.billing_vat_id,
        )
    await ctx.session.flush()
    return await _profile(ctx, c.id)


GET_PROFILE = Operation(
    name="get_profile",
    summary="Your account profile.",
    method="GET",
    path="/customer/me",
    handler=get_profile,
    output=Profile,
    scopes=frozenset({Scope.customer_read}),
    tags=("profile",),
)
UPDATE_PROFILE = Operation(
    name="update_profile",
    summary="Update your name, phone number and/or billing details for invoices (company, address, VAT "
    "id); the email cannot change.",
    method="PATCH",
    path="/customer/me",
    handler=update_profile,
    input=ProfileUpdate,
    output=Profile,
    scopes=frozenset({Scope.customer_write}),
    effect=Effect.WRITE,
    tags=("profile",),
)
register(GET_PROFILE, UPDATE_PROFILE)
