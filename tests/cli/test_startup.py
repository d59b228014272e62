"""Start-up of the `proxyplane` command (issue 20.3): a command imports only its own module; an admin
command imports the operator operations' modules, not the registry of every door, the gateway or the
adapters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from proxyplane.cli.common import OPERATOR_MODULES
from proxyplane.operations import REGISTRY

NOT_FOR_ADMIN = ("proxyplane.operations", "proxyplane.gateway", "proxyplane.adapters", "proxyplane.app")


def test_operator_modules_declare_every_operator_operation() -> None:
    operator = {op.handler.__module__ for op in REGISTRY.values() if "cli" in op.doors}
    assert operator == set(OPERATOR_MODULES)


def test_an_admin_command_imports_neither_the_registry_of_every_door_nor_the_gateway(
    tmp_path: Path, database_url: str
) -> None:
    """A real (read-only) command in a fresh process on the tests' migrated database: what it imported."""
    out = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "from proxyplane.cli import main\n"
        "main()\n"
    )
    env = {
        **os.environ,
        "PROXYPLANE_DATABASE_URL": database_url,
        "PROXYPLANE_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, "admin", "price", "show"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)  # the price books, as JSON
    modules = json.loads(out.read_text())
    assert "proxyplane.domains.stock.operator_ops" in modules and "proxyplane.ops" in modules
    assert [m for m in modules if m.startswith(NOT_FOR_ADMIN)] == []
