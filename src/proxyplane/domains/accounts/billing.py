"""Billing details printed on a customer's invoices (issue 22.8): company, address, VAT / tax id."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.storage.models.billing_details import CustomerBillingDetails
from proxyplane.storage.repos import billing_details as billing_rows

TAX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 .\-/]{1,39}$")


@dataclass(frozen=True)
class BillingDetails:
    company: str = ""
    address: str = ""  # lines separated by "\n"
    vat_id: str = ""

    @property
    def address_lines(self) -> tuple[str, ...]:
        return tuple(line.strip() for line in self.address.splitlines() if line.strip())


def clean_address(text: str) -> str:
    """Lines stripped, empty ones dropped, Windows line ends as "\n"."""
    return "\n".join(line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip())


def clean_vat_id(text: str) -> str:
    """Upper case, inner spaces kept as typed; "" clears it."""
    return text.strip().upper()


async def get_billing(session: AsyncSession, customer_id: int) -> BillingDetails:
    row = await session.get(CustomerBillingDetails, customer_id)
    if row is None:
        return BillingDetails()
    return BillingDetails(row.company, row.address, row.vat_id)


async def set_billing(
    session: AsyncSession,
    customer_id: int,
    *,
    company: str | None = None,
    address: str | None = None,
    vat_id: str | None = None,
) -> BillingDetails:
    """Change the given fields (None: keep); "" clears one."""
    row = await billing_rows.get_or_add(session, customer_id)
    if company is not None:
        row.company = company.strip()
    if address is not None:
        row.address = clean_address(address)
    if vat_id is not None:
        row.vat_id = clean_vat_id(vat_id)
    await session.flush()
    return BillingDetails(row.company, row.address, row.vat_id)
