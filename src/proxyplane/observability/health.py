"""API readiness: the store answers and its schema is the newest this code knows (no migration pending).
A schema newer than the code (an upgrade migrated first, this process not yet rolled) stays ready:
migrations add before they remove (docs/deploy.md, upgrades). Liveness is the process answering at all."""

from __future__ import annotations

import asyncio
from functools import lru_cache

from proxyplane.storage.engine import Database
from proxyplane.storage.repos.alembic_version import schema_revisions

TIMEOUT = 2.0


@lru_cache(maxsize=1)
def code_revisions() -> tuple[frozenset[str], frozenset[str]]:
    """(the migration heads of the installed code, every revision it knows)."""
    from alembic.script import ScriptDirectory

    from proxyplane.storage.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config("sqlite+aiosqlite:///unused.db"))
    return frozenset(script.get_heads()), frozenset(r.revision for r in script.walk_revisions())


async def database_heads(db: Database) -> frozenset[str]:
    async with db.unit_of_work(write=False) as uow:
        return await schema_revisions(uow.session)


async def not_ready(db: Database) -> str | None:
    """None when ready, else why not: the store unreachable, or migrations pending."""
    try:
        current = await asyncio.wait_for(database_heads(db), TIMEOUT)
    except TimeoutError:
        return f"database did not answer within {TIMEOUT:.0f} s"
    except Exception as exc:
        return f"database unreachable or not migrated ({type(exc).__name__})"
    heads, known = code_revisions()
    if current - known:  # migrated by a newer release during a rolling upgrade: this code still serves
        return None
    if heads - current:
        return f"migrations pending (database at {','.join(sorted(current)) or 'none'})"
    return None
