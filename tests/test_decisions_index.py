"""docs/decisions/README.md is the map of the topic files: one row per file, no row for a file that is gone
(issue 31.6: four topic files had no line in it)."""

import re
from pathlib import Path

DECISIONS = Path(__file__).resolve().parents[1] / "docs" / "decisions"
ROW = re.compile(r"^\| `([a-z0-9-]+\.md)` \| (.+) \|$", re.MULTILINE)


def test_every_topic_file_has_one_line_in_the_index() -> None:
    rows = ROW.findall((DECISIONS / "README.md").read_text())
    listed = [name for name, area in rows if area.strip()]
    files = sorted(p.name for p in DECISIONS.glob("*.md") if p.name != "README.md")
    assert sorted(listed) == files
    assert len(set(listed)) == len(listed)
