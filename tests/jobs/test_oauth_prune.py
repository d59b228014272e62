"""Purge of spent OAuth state (jobs/oauth_prune.py): the renewal job's pass deletes expired authorization
requests (pending, used or denied), expired tokens, revoked access tokens and revoked refresh tokens of
ended grants; it keeps live tokens and a rotated refresh token of a live grant (reuse detection)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select

from proxyplane.core.clock import utcnow
from proxyplane.domains.apikeys.service import create_key
from proxyplane.jobs.oauth_prune import prune_oauth
from proxyplane.jobs.renewals import run_once
from proxyplane.platform import Platform
from proxyplane.storage.models.oauth import OAuthGrant, OAuthRequest, OAuthToken
from tests.support import Account

pytestmark = pytest.mark.anyio


async def _grant(platform: Platform, account: Account, ended: bool) -> uuid.UUID:
    async with platform.db.unit_of_work() as uow:
        key, _ = await create_key(uow.session, account.customer_id, "OAuth: t", frozenset(), prefix="oauth")
        grant = OAuthGrant(
            customer_id=account.customer_id,
            api_key_id=key.id,
            client_id="https://agent.example/c.json",
            client_name="t",
            resource="https://pp.example/api/v1/mcp",
            revoked_at=utcnow() if ended else None,
        )
        uow.session.add(grant)
        await uow.commit()
        return grant.id


async def test_spent_requests_and_tokens_purged_live_ones_kept(platform: Platform, account: Account) -> None:
    now = utcnow()
    live, ended = await _grant(platform, account, False), await _grant(platform, account, True)
    hour = timedelta(hours=1)
    tokens = {  # name: (grant, kind, expires in, revoked)
        "live-access": (live, "access", hour, False),
        "live-refresh": (live, "refresh", 30 * 24 * hour, False),
        "rotated-refresh": (live, "refresh", 30 * 24 * hour, True),  # kept: reuse ends the grant
        "expired-access": (live, "access", -hour, False),
        "expired-refresh": (live, "refresh", -hour, True),
        "revoked-access": (live, "access", hour, True),
        "ended-refresh": (ended, "refresh", 30 * 24 * hour, True),
    }
    tag = uuid.uuid4().hex[:8]
    async with platform.db.unit_of_work() as uow:
        for name, (grant_id, kind, expires, revoked) in tokens.items():
            uow.session.add(
                OAuthToken(
                    token_hash=f"{tag}-{name}",
                    grant_id=grant_id,
                    kind=kind,
                    scopes=[],
                    expires_at=now + expires,
                    revoked_at=now if revoked else None,
                )
            )
        for name, expires, used in (("pending", hour, False), ("stale", -hour, False), ("used", -hour, True)):
            uow.session.add(
                OAuthRequest(
                    client_id=f"{tag}-{name}",
                    redirect_uri="http://127.0.0.1/cb",
                    code_challenge="x" * 43,
                    scopes=[],
                    resource="https://pp.example/api/v1/mcp",
                    expires_at=now + expires,
                    used_at=now - hour if used else None,
                )
            )
        await uow.commit()

    await run_once(platform)  # the periodic job's pass purges by the real clock
    assert await prune_oauth(platform.db, batch=2) == 0  # nothing left to purge

    async with platform.db.unit_of_work(write=False) as uow:
        left = set((await uow.session.scalars(select(OAuthToken.token_hash))).all())
        requests = set((await uow.session.scalars(select(OAuthRequest.client_id))).all())
    assert {h for h in left if h.startswith(tag)} == {
        f"{tag}-{n}" for n in ("live-access", "live-refresh", "rotated-refresh")
    }
    assert {c for c in requests if c.startswith(tag)} == {f"{tag}-pending"}


async def test_backlog_worked_off_in_bounded_batches(platform: Platform, account: Account) -> None:
    grant = await _grant(platform, account, False)
    tag = uuid.uuid4().hex[:8]
    async with platform.db.unit_of_work() as uow:
        for i in range(5):
            uow.session.add(
                OAuthToken(
                    token_hash=f"{tag}-{i}",
                    grant_id=grant,
                    kind="access",
                    scopes=[],
                    expires_at=utcnow() - timedelta(minutes=1),
                )
            )
        await uow.commit()
    assert await prune_oauth(platform.db, batch=2) >= 5  # batches of two until a short one
    assert await prune_oauth(platform.db, batch=2) == 0
