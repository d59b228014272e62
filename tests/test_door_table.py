"""docs/architecture.md's door -> handler table is the registry's (regenerate: scripts/door_table.py)."""

import importlib.util
import re
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


DOCS = Path(__file__).resolve().parents[1] / "docs"
TYPED_COUNT = re.compile(r"\b\d+ (?:MCP |REST )?(?:tools|operations)\b")


def test_counts_are_generated_never_typed() -> None:
    """Issue 30.7: docs/decisions.md said 80 MCP tools when there were 92. The door table's section opens
    with the counts of each door (generated); no other text of the docs types a count of tools or
    operations."""
    from proxyplane.ops import served

    spec = importlib.util.spec_from_file_location("door_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert f", {len(served('mcp'))} MCP tools, " in module.counts()
    assert module.counts() in module.current()
    typed = []
    for doc in [DOCS.parent / "README.md", *DOCS.glob("*.md"), *DOCS.glob("decisions/*.md")]:
        text = doc.read_text()
        if module.START in text:  # the generated section is the registry's
            text = text[: text.index(module.START)] + text[text.index(module.END) :]
        typed += [f"{doc.name}: {m.group()}" for m in TYPED_COUNT.finditer(text)]
    assert typed == []
