"""The last owner through the operator API (issue 33, "Bad input and faults"): with one active owner, its
own key may neither demote nor lock it (409 naming the last active owner) and it keeps working; with a
second owner, the demotion goes through."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import select, update

from proxyplane.platform import Platform
from proxyplane.storage.models.operators import Operator
from tests.domains.operators.helpers import make_operator
from tests.support import bearer

pytestmark = pytest.mark.anyio
ADMIN = "/api/admin/v1"


async def test_the_last_owner_cannot_be_demoted_or_locked_over_rest(
    client: httpx.AsyncClient, platform: Platform
) -> None:
    email, _, key = await make_operator(platform, "owner")
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
        owner = bearer(key)
        for path, body in (
            ("operator_set_role", {"operator_email": email, "role": "admin"}),
            ("operator_lock", {"operator_email": email}),
        ):
            refused = await client.post(f"{ADMIN}/{path}", json=body, headers=owner)
            assert refused.status_code == 409 and "last active owner" in refused.text, refused.text
        listed = (await client.get(f"{ADMIN}/operator_list", headers=owner)).json()
        [me] = [o for o in listed["operators"] if o["operator_email"] == email]
        assert me["role"] == "owner" and me["status"] == "active"
        second, _, _ = await make_operator(platform, "owner")
        demoted = await client.post(
            f"{ADMIN}/operator_set_role", json={"operator_email": second, "role": "admin"}, headers=owner
        )
        assert demoted.status_code == 200, demoted.text
    finally:
        async with platform.db.unit_of_work() as uow:
            await uow.session.execute(update(Operator).where(Operator.id.in_(others)).values(status="active"))
            await uow.commit()
