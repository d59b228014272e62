"""service_ips' two foreign keys back on PostgreSQL (issue 31: 0024p reverted)

Migration 0024p replaced them on PostgreSQL by per-statement triggers (one reference check per order
instead of two per IP); its own same-window end-to-end A/B found no gain above noise, and the models
(which declare the foreign keys) no longer matched the database (tests/storage/test_schema_drift.py).
This drops 0024p's triggers and functions and creates the constraints again, with the names and rules
the models declare: ip_id -> stock_ips.id (NO ACTION), service_id -> services.service_id (ON DELETE
CASCADE). SQLite kept its foreign keys: nothing to do there. Downgrade: 0024p's triggers again.

Revision ID: 0025
Revises: 0024p
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024p"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _triggers() -> ModuleType:
    """Migration 0024p (its triggers' DDL, and its downgrade: the constraints)."""
    path = Path(__file__).with_name("0024p_service_ips_reference_triggers.py")
    spec = importlib.util.spec_from_file_location("pp_migration_0024p", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _triggers().downgrade()  # triggers and functions dropped, the two foreign keys created


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _triggers().upgrade()
