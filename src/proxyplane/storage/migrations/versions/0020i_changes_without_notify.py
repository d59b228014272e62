"""gateway change log (issue 15): the trigger functions pp_log_*() stop sending NOTIFY

PostgreSQL serializes the commits of transactions that sent NOTIFY under one global lock (held through
the WAL flush when fsync is on), so a NOTIFY in every order's commit capped the commits per second of the
whole cluster. The change log rows are written exactly as before; the wake-up is now sent by the change
notifier (src/proxyplane/jobs/change_notifier.py) in its own tiny statement when the log advanced.
Generic: every function named pp_log_% loses its ``IF FOUND THEN PERFORM pg_notify(...); END IF;``
block; the downgrade puts the block back before ``RETURN NULL;``. SQLite has no NOTIFY: untouched.

Revision ID: 0020i
Revises: 0019c
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020i"
down_revision: str | Sequence[str] | None = "0019c"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NOTIFY_BLOCK = re.compile(
    r"\n?[ \t]*IF FOUND THEN\s*PERFORM pg_notify\('proxyplane_changes', ''\);\s*END IF;[ \t]*", re.I
)
NOTIFY_SQL = "  IF FOUND THEN\n    PERFORM pg_notify('proxyplane_changes', '');\n  END IF;\n"
RETURN_NULL = re.compile(r"^([ \t]*)RETURN NULL;", re.M)
FUNCTIONS = sa.text(
    "SELECT p.oid, pg_get_functiondef(p.oid) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
    "WHERE p.proname LIKE 'pp\\_log\\_%' AND n.nspname = current_schema() ORDER BY p.proname"
)


def _rewrite(change: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for _oid, definition in bind.execute(FUNCTIONS).all():
        if change == "drop":
            new = NOTIFY_BLOCK.sub("", definition)
        elif NOTIFY_BLOCK.search(definition) is None:
            new = RETURN_NULL.sub(lambda m: NOTIFY_SQL + m.group(0), definition, count=1)
        else:
            new = definition
        if new != definition:
            # pg_get_functiondef gives a complete CREATE OR REPLACE FUNCTION statement
            bind.exec_driver_sql(new)


def upgrade() -> None:
    _rewrite("drop")


def downgrade() -> None:
    _rewrite("add")
