"""Test helpers: accounts made through the domain code, keys, auth headers."""

from __future__ import annotations

import uuid

from proxyplane.platform import Platform


def unique_email() -> str:
    return f"user-{uuid.uuid4().hex[:12]}@example.com"


class Account:
    """A customer made through the domain code, with helpers to mint keys."""

    def __init__(self, platform: Platform, customer_id: int, email: str, password: str) -> None:
        self.platform = platform
        self.customer_id = customer_id
        self.email = email
        self.password = password

    async def key(self, scopes: set[str] | frozenset[str] | None = None, name: str = "test") -> str:
        from proxyplane.core.scopes import ALL_SCOPES
        from proxyplane.domains.apikeys.service import create_key

        async with self.platform.db.unit_of_work() as uow:
            _, raw = await create_key(uow.session, self.customer_id, name, frozenset(scopes or ALL_SCOPES))
            await uow.commit()
        return raw

    async def credit(self, cents: int) -> None:
        from proxyplane.domains.wallet.service import credit

        async with self.platform.db.unit_of_work() as uow:
            await credit(uow.session, self.customer_id, cents, "adjustment", "test credit")
            await uow.commit()


async def make_account(platform: Platform, password: str = "correct horse battery") -> Account:
    from proxyplane.domains.accounts.service import create_customer

    email = unique_email()
    async with platform.db.unit_of_work() as uow:
        c = await create_customer(uow.session, email, password, "Test User")
        await uow.commit()
    return Account(platform, c.id, email, password)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
