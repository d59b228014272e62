"""docs/architecture.md's lean-path table is storage/lean_paths.py's (regenerate: scripts/lean_table.py),
and every object and test it names exists (issue 31)."""

import importlib
import importlib.util
from pathlib import Path

import pytest

from proxyplane.storage.lean_paths import PATHS

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "lean_table.py"


def _resolve(ref: str) -> object:
    module, _, attr = ref.partition(":")
    found: object = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found


def test_the_lean_table_in_the_docs_is_the_list() -> None:
    spec = importlib.util.spec_from_file_location("lean_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.current() == module.section(), "run: python scripts/lean_table.py --write"


@pytest.mark.parametrize("path", PATHS, ids=[p.name[:40] for p in PATHS])
def test_each_lean_path_names_real_code_and_a_real_test(path) -> None:  # type: ignore[no-untyped-def]
    for ref in (path.lean, path.plain, path.switch):
        assert _resolve(ref) is not None, ref
    file, _, name = path.test.partition("::")
    source = (ROOT / file).read_text()
    assert f"def {name}(" in source, path.test
