"""docs/architecture.md's door -> handler table is the registry's (regenerate: scripts/door_table.py)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "door_table.py"


def test_the_door_table_in_the_docs_is_the_registry() -> None:
    spec = importlib.util.spec_from_file_location("door_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generated = module.section()
    assert module.current() == generated, "run: python scripts/door_table.py --write"
    assert "`GET /api/billing/credit`" in generated and "`GET /api/v1/customer/wallet/balance`" in generated
