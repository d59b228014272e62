"""The models and the migrated schema agree (issue 31): after `alembic upgrade head` (the session's
database, tests/conftest.py), Alembic's autogenerate comparison of the models with the database finds
nothing, on both engines. A model changed without its migration (or a migration the models do not
follow) fails here, not when an order first runs on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from proxyplane.platform import Platform
from proxyplane.storage.models import Base

pytestmark = pytest.mark.anyio


def _differences(conn: Any) -> list[Any]:
    context = MigrationContext.configure(conn, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_models_match_the_migrated_schema(platform: Platform) -> None:
    async with platform.db.engine.connect() as conn:
        found = await conn.run_sync(_differences)
    assert found == []
