"""The rows an UPDATE or DELETE matched (issue 31): `session.execute` is typed as returning a Result,
which has no `rowcount`; at run time a DML statement's result is a CursorResult, which has."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import CursorResult


def rowcount(result: Any) -> int:
    """The matched row count of a DML statement's result (0 when the driver reports none)."""
    if not isinstance(result, CursorResult):
        raise TypeError(f"no row count on {type(result).__name__}")
    return int(result.rowcount or 0)
