"""Import rules: domain, core and storage code import no web framework or MCP; the gateway imports only
core and storage of ours (it shares nothing else with the control plane)."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "proxyplane"
WEB = ("fastapi", "starlette", "mcp", "uvicorn", "jinja2")


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(*parts: str) -> list[Path]:
    return sorted((SRC.joinpath(*parts)).rglob("*.py"))


@pytest.mark.parametrize("package", ["domains", "core", "storage", "processors"])
def test_no_web_framework_below_adapters(package: str) -> None:
    bad = [(p.relative_to(SRC), m) for p in files(package) for m in imports(p) if m.split(".")[0] in WEB]
    assert bad == []


def test_core_imports_nothing_of_ours_but_core() -> None:
    bad = [
        (p.relative_to(SRC), m)
        for p in files("core")
        for m in imports(p)
        if m.startswith("proxyplane.") and not m.startswith("proxyplane.core")
    ]
    assert bad == []


# The one domain writer the gateway calls: the usage flush adds a sub-user's counters and its 80/100 %
# events in the flush's own transaction (domain rules, not gateway code; it imports no operation layer).
GATEWAY_DOMAIN_WRITERS = ("proxyplane.domains.subusers.metering", "proxyplane.domains.quotas.metering")


def test_gateway_imports_only_core_and_storage() -> None:
    allowed = ("proxyplane.core", "proxyplane.storage", "proxyplane.gateway")
    bad = [
        (p.relative_to(SRC), m)
        for p in files("gateway")
        for m in imports(p)
        if m.startswith("proxyplane") and not m.startswith(allowed) and m not in GATEWAY_DOMAIN_WRITERS
    ]
    assert bad == []
    assert files("gateway"), "the gateway package exists"


def test_domains_import_no_gateway() -> None:
    """Issue 31.4: the control plane's domains and the gateway meet in core/ and storage/ only (what the
    legacy networkstatus shares with the nodes' published prefixes: core/address_prefixes.py)."""
    bad = [
        (p.relative_to(SRC), m)
        for p in files("domains")
        for m in imports(p)
        if m == "proxyplane.gateway" or m.startswith("proxyplane.gateway.")
    ]
    assert bad == []


def test_migrations_have_one_head() -> None:
    """New migrations chain after the newest one (parallel branches were merged by 0011)."""
    from alembic.script import ScriptDirectory

    from proxyplane.storage.migrate import alembic_config

    heads = ScriptDirectory.from_config(alembic_config("sqlite+aiosqlite:///unused.db")).get_heads()
    assert len(heads) == 1, heads


def test_no_adapter_imports_another_adapter() -> None:
    """Each door stands alone; they meet only in the composition root (`proxyplane/app.py`)."""
    root = SRC / "adapters"
    bad = []
    for p in sorted(root.rglob("*.py")):
        own = p.relative_to(root).parts[0]
        for m in imports(p):
            parts = m.split(".")
            if parts[:2] == ["proxyplane", "adapters"] and len(parts) > 2 and parts[2] != own:
                bad.append((p.relative_to(SRC), m))
    assert bad == []
    assert files("adapters", "rest"), "the REST adapter exists"


def commits(path: Path) -> list[int]:
    """Lines calling `.commit()` (a unit of work's or a session's)."""
    return [
        n.lineno
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "commit"
    ]


def test_domain_code_never_commits() -> None:
    """Services never commit: `invoke()` commits an operation once; jobs own their own transactions."""
    bad = [(p.relative_to(SRC), line) for p in files("domains") for line in commits(p)]
    assert bad == []
    assert any(commits(p) for p in files("jobs")), "the jobs commit their own transactions"


def test_dashboard_account_actions_commit_through_invoke() -> None:
    """Sign up/in/out, password change and session touches are web-door operations (accounts/web_ops.py)."""
    web = SRC / "adapters" / "web"
    assert [(name, commits(web / name)) for name in ("sessions.py", "account.py")] == [
        ("sessions.py", []),
        ("account.py", []),
    ]


def test_no_adapter_commits() -> None:
    """A door translates and calls `invoke` (a processor's callback too: payment_events.py invokes the
    registered `payment_event`); dashboard form tokens are invoke's door_key, not a commit of their own; the
    OAuth authorization server and its consent page run the operations of domains/oauth/ops.py and
    consent_ops.py (issue 20.1)."""
    bad = [(p.relative_to(SRC), line) for p in (SRC / "adapters").rglob("*.py") for line in commits(p)]
    assert bad == []
    assert commits(SRC / "adapters" / "web" / "forms.py") == []


def test_no_hidden_context_in_session_info() -> None:
    """Per-call state is core/call.py's typed CallContext on the unit of work, never loose session.info."""
    bad = [
        p.relative_to(SRC)
        for p in SRC.rglob("*.py")
        if ".info[" in p.read_text() or ".info.get(" in p.read_text() or ".info.pop(" in p.read_text()
    ]
    assert sorted(bad) == [Path("core/call.py"), Path("storage/engine.py")]  # the bridge; pool record info


# The adapters that still read the database themselves, each with its reason; every other door runs only
# registered operations (through invoke) or domain functions that own their reads (apikeys.authenticate).
ADAPTER_QUERIES = {
    # auth look-ups before any operation can run: who the caller is decides which operation may run
    Path("adapters/web/base.py"): "the dashboard's session cookie -> the signed-in customer",
    Path("adapters/web/sessions.py"): "the dashboard's session row behind the cookie",
    Path("adapters/legacy/auth.py"): "the legacy API's Basic auth -> the customer",
}


def queries(path: Path) -> bool:
    """Whether a module reads the database itself: a unit of work, the ORM models or SQL expressions."""
    text = path.read_text()
    own = {m for m in imports(path) if m.startswith(("sqlalchemy", "proxyplane.storage.models"))}
    return "unit_of_work(" in text or bool(own - {"sqlalchemy.exc"})  # sqlalchemy.exc: error mapping


def test_adapters_run_no_queries_of_their_own() -> None:
    """Issue 20: a door is a thin translation over invoke; the MCP adapter's own reads (limits, the
    confirm-spending flag) are a registered operation and the key gate's principal; the test processor's
    checkout page reads through `checkout_view` (the `checkout` door)."""
    found = {p.relative_to(SRC) for p in (SRC / "adapters").rglob("*.py") if queries(p)}
    assert found == set(ADAPTER_QUERIES)
