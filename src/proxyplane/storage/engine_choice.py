"""Which engine a unit of work runs on, and whether its lean forms are used (issue 31): asked here, in
storage/, never in domains/.

`LEAN` is the one setting of the lean machinery (storage/lean_setting.py, environment
PROXYPLANE_LEAN_STORAGE, on unless "0"): off, every lean form gives way to its plain twin, so a run with it
off checks each lean form against the plain path (the oracle).
"""

from __future__ import annotations

from typing import Any

from proxyplane.storage.driver import LeanSession
from proxyplane.storage.lean_setting import LEAN as LEAN


def dialect_name(session: Any) -> str:
    """The dialect of the session's engine, without building a LeanSession's ORM session."""
    if type(session) is LeanSession:
        return str(session.state[1].name)
    bind = session.bind
    if bind is None:
        bind = session.get_bind()
    return str(bind.dialect.name)


def is_postgres(session: Any) -> bool:
    return dialect_name(session) == "postgresql"


def lean(session: Any) -> bool:
    """PostgreSQL with the lean forms on."""
    return LEAN and is_postgres(session)
