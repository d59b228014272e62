"""Operator accounts (issue 33): one-time password, TOTP enrolment at the first sign-in, codes used once,
recovery codes, throttling, sessions listed and revocable, keys no wider than their operator, the last
owner kept."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from proxyplane.core.errors import Conflict, ValidationFailed
from proxyplane.domains.accounts.throttle import PASSWORD_ACCOUNT_ADDRESS, TOTP_CODE
from proxyplane.domains.operators.auth import by_key, by_session
from proxyplane.domains.operators.service import token_hash
from proxyplane.ops import Caller
from proxyplane.platform import Platform
from proxyplane.storage.models.operators import Operator, OperatorAudit
from tests.domains.operators.helpers import code_now, make_operator, run

pytestmark = pytest.mark.anyio
WEB = Caller(customer_id=None, channel="console", client_ip="127.0.0.21", user_agent="pytest")


async def enrolled(platform: Platform, role: str = "support") -> tuple[str, str, str, list[str]]:
    """An operator through its first sign-in: (email, password, TOTP secret, recovery codes)."""
    email, once, _ = await make_operator(platform, role)
    signed = await run(platform, "console_sign_in", WEB, email=email, password=once)
    assert signed.outcome == "ok" and signed.stage == "enrol"
    sid = token_hash(signed.token)
    uri = (await run(platform, "console_enrolment", WEB, session_id=sid)).uri
    secret = uri.split("secret=")[1].split("&")[0]
    password = "a-long-new-password-1"
    done = await run(
        platform, "console_enrol", WEB, session_id=sid, code=code_now(secret), new_password=password
    )
    assert done.outcome == "ok" and len(done.recovery_codes) == 10
    who = await by_session(platform.db, signed.token)
    assert who is not None and who.stage == "full" and who.role == role
    return email, password, secret, done.recovery_codes


async def test_first_sign_in_enrols_totp_then_every_sign_in_needs_a_code(platform: Platform) -> None:
    email, password, secret, codes = await enrolled(platform)
    # the one-time password is gone; the new one opens a session that still needs the code
    signed = await run(platform, "console_sign_in", WEB, email=email, password=password)
    assert signed.outcome == "ok" and signed.stage == "totp"
    who = await by_session(platform.db, signed.token)
    assert who is not None and who.stage == "totp"
    sid = token_hash(signed.token)
    assert (
        await run(platform, "console_second_factor", WEB, session_id=sid, code="000000")
    ).outcome == "wrong"
    ok = await run(platform, "console_second_factor", WEB, session_id=sid, code=code_now(secret, 1))
    assert ok.outcome == "ok"
    # the same code does not open a second session (each time step signs in once)
    again = await run(platform, "console_sign_in", WEB, email=email, password=password)
    sid2 = token_hash(again.token)
    replay = await run(platform, "console_second_factor", WEB, session_id=sid2, code=code_now(secret, 1))
    assert replay.outcome == "wrong"
    # a recovery code works once
    assert (await run(platform, "console_second_factor", WEB, session_id=sid2, code=codes[0])).outcome == "ok"
    third = await run(platform, "console_sign_in", WEB, email=email, password=password)
    sid3 = token_hash(third.token)
    assert (
        await run(platform, "console_second_factor", WEB, session_id=sid3, code=codes[0])
    ).outcome == "wrong"
    # sign-ins are in the audit log, without any secret
    async with platform.db.unit_of_work(write=False) as uow:
        rows = (
            (await uow.session.execute(select(OperatorAudit).where(OperatorAudit.actor == email)))
            .scalars()
            .all()
        )
    assert {"console_password", "console_totp_enrolled", "console_sign_in"} <= {r.action for r in rows}
    text = repr([(r.before, r.after, r.detail) for r in rows])
    assert secret not in text and password not in text and codes[1] not in text


async def test_sign_in_and_codes_are_throttled(platform: Platform) -> None:
    email, password, secret, _ = await enrolled(platform)
    caller = Caller(customer_id=None, channel="console", client_ip="127.0.0.22")
    for _ in range(PASSWORD_ACCOUNT_ADDRESS.burst):
        assert (
            await run(platform, "console_sign_in", caller, email=email, password="wrong")
        ).outcome == "wrong"
    right = await run(platform, "console_sign_in", caller, email=email, password=password)
    assert right.outcome == "throttled" and right.token == ""
    # codes: the operator's own bucket, whatever the address
    signed = await run(platform, "console_sign_in", WEB, email=email, password=password)
    sid = token_hash(signed.token)
    for _ in range(TOTP_CODE.burst):
        assert (
            await run(platform, "console_second_factor", WEB, session_id=sid, code="123456")
        ).outcome == "wrong"
    late = await run(platform, "console_second_factor", WEB, session_id=sid, code=code_now(secret))
    assert late.outcome == "throttled"


async def test_sessions_are_listed_and_revocable(platform: Platform) -> None:
    email, password, secret, _ = await enrolled(platform)
    signed = await run(platform, "console_sign_in", WEB, email=email, password=password)
    who = await by_session(platform.db, signed.token)
    assert who is not None
    me = Caller(customer_id=None, channel="console", role=who.role, actor=email, operator_id=who.operator_id)
    listed = await run(platform, "operator_my_sessions", me)
    ids = [s["session_id"] for s in listed["sessions"]]
    assert who.session_id in ids and len(ids) == 2
    await run(platform, "operator_session_revoke", me, session_id=who.session_id)
    assert await by_session(platform.db, signed.token) is None
    assert len((await run(platform, "operator_my_sessions", me))["sessions"]) == 1


async def test_keys_are_no_wider_than_their_operator_and_die_with_a_lock(platform: Platform) -> None:
    email, _, key = await make_operator(platform, "support")
    with pytest.raises(ValidationFailed):
        await run(platform, "operator_operator_key_create", operator_email=email, name="x", role="admin")
    assert (await by_key(platform.db, key)) is not None
    await run(platform, "operator_operator_lock", operator_email=email)
    assert await by_key(platform.db, key) is None


async def test_the_last_owner_cannot_be_removed_demoted_or_locked(platform: Platform) -> None:
    email, _, _ = await make_operator(platform, "owner")
    async with platform.db.unit_of_work() as uow:  # every other owner locked for this test
        others = (
            (
                await uow.session.execute(
                    select(Operator.id).where(
                        Operator.role == "owner", Operator.status == "active", Operator.email != email
                    )
                )
            )
            .scalars()
            .all()
        )
        await uow.session.execute(update(Operator).where(Operator.id.in_(others)).values(status="locked"))
        await uow.commit()
    try:
        with pytest.raises(Conflict, match="last active owner"):
            await run(platform, "operator_operator_set_role", operator_email=email, role="admin")
        with pytest.raises(Conflict, match="last active owner"):
            await run(platform, "operator_operator_lock", operator_email=email)
        second, _, _ = await make_operator(platform, "owner")
        await run(platform, "operator_operator_set_role", operator_email=email, role="admin")  # now allowed
        with pytest.raises(Conflict, match="last active owner"):
            await run(platform, "operator_operator_lock", operator_email=second)
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(update(Operator).where(Operator.id.in_(others)).values(status="active"))
            await uow.commit()
