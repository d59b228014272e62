"""The MCP endpoint's access-token check (issue 20.2: one statement, no ORM, no cache): a live token gives
its grant's principal; each way a token stops being valid is refused on the very next check."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import update

from proxyplane.core.clock import utcnow
from proxyplane.core.scopes import ALL_SCOPES
from proxyplane.domains.apikeys.service import revoke_key
from proxyplane.domains.oauth import clients, service
from proxyplane.platform import Platform
from proxyplane.storage.models import Customer
from proxyplane.storage.models.oauth import OAuthGrant, OAuthToken
from tests.support import Account

pytestmark = pytest.mark.anyio
RESOURCE = "http://testserver/api/v1/mcp"


async def grant(platform: Platform, customer_id: int, scopes: frozenset[str]) -> tuple[str, str, uuid.UUID]:
    """(access token, refresh token, grant id) of a fresh consent."""
    client_id = f"http://127.0.0.1:9/{uuid.uuid4().hex}.json"
    async with platform.db.unit_of_work() as uow:
        await clients.store_client(uow.session, client_id, "cimd", {"client_id": client_id})
        request_id = await service.start_request(
            uow.session, client_id, "http://127.0.0.1:9/cb", True, None, "c" * 43, [], RESOURCE
        )
        row, code = await service.approve(uow.session, request_id, customer_id, "t", scopes, None, None, True)
        issued = await service.exchange_code(uow.session, code)
        await uow.commit()
    assert issued is not None and row.grant_id is not None
    return issued.access_token, issued.refresh_token, row.grant_id


async def test_live_token_then_every_kind_of_end_is_refused_at_once(
    platform: Platform, account: Account
) -> None:
    check = service.authenticate_token
    access, refresh, grant_id = await grant(platform, account.customer_id, frozenset({"catalog:read"}))
    principal = await check(platform.db, access, RESOURCE)
    assert principal is not None and principal.customer_id == account.customer_id
    assert principal.grant_id == grant_id and principal.scopes == frozenset({"catalog:read"})
    assert principal.confirm_spending is True
    assert await check(platform.db, access, RESOURCE + "/other") is None  # another audience
    assert await check(platform.db, refresh, RESOURCE) is None  # a refresh token is not an access token
    assert await check(platform.db, access + "x", RESOURCE) is None

    async with platform.db.unit_of_work() as uow:  # the grant's key row revoked (REST revoke_api_key)
        grant_row = await uow.session.get(OAuthGrant, grant_id)
        assert grant_row is not None
        await revoke_key(uow.session, account.customer_id, grant_row.api_key_id)
        await uow.commit()
    assert await check(platform.db, access, RESOURCE) is None

    access, _, grant_id = await grant(platform, account.customer_id, ALL_SCOPES)
    assert await check(platform.db, access, RESOURCE) is not None
    async with platform.db.unit_of_work() as uow:  # the token alone expired
        await uow.session.execute(
            update(OAuthToken)
            .where(OAuthToken.token_hash == service.digest(access))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
        await uow.commit()
    assert await check(platform.db, access, RESOURCE) is None

    access, _, grant_id = await grant(platform, account.customer_id, ALL_SCOPES)
    async with platform.db.unit_of_work() as uow:  # the customer suspended, then active again
        await uow.session.execute(
            update(Customer).where(Customer.id == account.customer_id).values(status="suspended")
        )
        await uow.commit()
    assert await check(platform.db, access, RESOURCE) is None
    async with platform.db.unit_of_work() as uow:
        await uow.session.execute(
            update(Customer).where(Customer.id == account.customer_id).values(status="active")
        )
        await uow.commit()
    assert await check(platform.db, access, RESOURCE) is not None
    async with platform.db.unit_of_work() as uow:  # the grant revoked (dashboard, RFC 7009)
        await service.revoke_grant(uow.session, account.customer_id, grant_id)
        await uow.commit()
    assert await check(platform.db, access, RESOURCE) is None
