"""Issue 31: rules with reasons, beside tests/test_architecture.py's import rules."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "proxyplane"


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


# storage owns every statement. Outside storage/, code says what an operation does; the
# statements that do it (writes of a model, SQL text, driver statements, dialect choices) live in
# storage/ (storage/repos/<table>.py: one writer per table). What has not moved yet is listed below,
# each with its reason; a file not listed fails (move the statement into storage/repos/, or list it with
# a reason), and a listed file that no longer needs its entry fails too (remove the entry: the lists
# only shrink). Not detected: attribute writes on loaded ORM objects (`svc.status = ...`).
_SQL = re.compile(
    r"\b(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|SAVEPOINT|TRUNCATE\b|WITH\s+\w+\s+AS\s*\("
    r"|SELECT\s+[\w*(]|COPY\s+\w+)"
)
_DIALECT = re.compile(
    r"is_sqlite|dialect\s*[=!]=|dialect\.name|[=!]=\s*[\"'](postgresql|sqlite)[\"']|postgres\s*=\s*\w"
)
_DRIVER = ("proxyplane.storage.driver", "proxyplane.storage.transaction", "proxyplane.storage.sqlite_driver")
_WRITE_CALLS = {"pg_insert", "sqlite_insert"}
_SESSION_WRITES = {"add", "add_all", "delete", "merge"}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, kinds) and n.body and isinstance(n.body[0], ast.Expr)
    }


def has_sql_text(path: Path) -> bool:
    """A string literal (docstrings aside) that is SQL."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if id(node) in docs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            return True
        if isinstance(node, ast.JoinedStr):
            text = "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
            if _SQL.search(text):
                return True
    return False


def runs_driver_statements(path: Path) -> bool:
    """Statements sent past SQLAlchemy's session: storage's driver path, or exec_driver_sql."""
    return bool(imports(path) & set(_DRIVER)) or "exec_driver_sql" in path.read_text()


def compares_dialects(path: Path) -> bool:
    """A choice by engine: a dialect compared or named, `is_sqlite`, a `postgres=` flag passed on, or a
    dialect's own insert (sqlalchemy.dialects)."""
    code = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("#"))
    return bool(_DIALECT.search(code)) or any(m.startswith("sqlalchemy.dialects") for m in imports(path))


def writes_models(path: Path) -> bool:
    """insert/update/delete of SQLAlchemy (or a dialect's insert), or session.add/add_all/delete/merge."""
    tree = ast.parse(path.read_text())
    names = set(_WRITE_CALLS)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sqlalchemy"):
            names.update(a.asname or a.name for a in node.names if a.name in ("insert", "update", "delete"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in names:
            return True
        if isinstance(f, ast.Attribute) and f.attr in _SESSION_WRITES:
            owner = f.value
            if (isinstance(owner, ast.Name) and owner.id == "session") or (
                isinstance(owner, ast.Attribute) and owner.attr == "session"
            ):
                return True
    return False


STORAGE_WRITES = {
}
STORAGE_SQL = {
}
STORAGE_DRIVER = {
}
STORAGE_DIALECT = {
}
STORAGE_RULES = {
    "writes a model": (writes_models, STORAGE_WRITES),
    "holds SQL text": (has_sql_text, STORAGE_SQL),
    "runs driver statements": (runs_driver_statements, STORAGE_DRIVER),
    "chooses by dialect": (compares_dialects, STORAGE_DIALECT),
}


@pytest.mark.parametrize("rule", sorted(STORAGE_RULES))
def test_storage_owns_every_statement(rule: str) -> None:
    """Issue 31 (see the comment above STORAGE_WRITES): outside storage/ nothing `rule` but the listed."""
    check, allowed = STORAGE_RULES[rule]
    outside = [p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] != "storage"]
    found = {str(p.relative_to(SRC)) for p in outside if check(p)}
    new = sorted(found - set(allowed))
    assert not new, f"{rule} outside storage/: {new}; move it into storage/repos/ (or list it with a reason)"
    stale = sorted(p for p in set(allowed) - found if (SRC / p).exists())
    assert not stale, f"no longer {rule}: {stale}; remove their entries (the allow-list only shrinks)"
    assert all(allowed.values()), "every entry says why"


def test_rowcount_through_the_helper() -> None:
    """A DML result's row count through storage.rowcount.rowcount (typed), never `.rowcount` with a
    `type: ignore` (session.execute is typed as returning a Result, which has no rowcount)."""
    ignored = [
        f"{p.relative_to(SRC)}:{n}"
        for p in SRC.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if ".rowcount" in line and "type: ignore" in line
    ]
    assert not ignored, f"use storage.rowcount.rowcount(result): {ignored}"
