"""The operator audit log is append-only on both engines (migration 0028's triggers): a row written by an
operator action can be read, never changed or deleted."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.exc import DBAPIError

from proxyplane.platform import Platform
from proxyplane.storage.models.operators import OperatorAudit
from tests.domains.operators.helpers import make_operator

pytestmark = pytest.mark.anyio


async def test_audit_rows_cannot_be_updated_or_deleted(platform: Platform) -> None:
    email, _, _ = await make_operator(platform, "viewer")
    async with platform.db.unit_of_work(write=False) as uow:
        row_id = (
            (
                await uow.session.execute(
                    select(OperatorAudit.id).where(OperatorAudit.target == f"operator_email:{email}")
                )
            )
            .scalars()
            .first()
        )
    assert row_id is not None
    for statement in (
        update(OperatorAudit).where(OperatorAudit.id == row_id).values(actor="someone else"),
        delete(OperatorAudit).where(OperatorAudit.id == row_id),
    ):
        with pytest.raises(DBAPIError, match="append-only"):
            async with platform.db.unit_of_work() as uow:
                await uow.session.execute(statement)
                await uow.commit()
    async with platform.db.unit_of_work(write=False) as uow:
        actor = (
            await uow.session.execute(select(OperatorAudit.actor).where(OperatorAudit.id == row_id))
        ).scalar_one()
    assert actor == "cli"
