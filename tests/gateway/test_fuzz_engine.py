"""CI hook for the C engine's handshake fuzzer: scripts/fuzz.sh runs the libFuzzer target (ASan + UBSan)
for 20 s on the seed corpus; it must end without a crash, a sanitizer report or a broken check, having
executed a real number of inputs. Skipped when Debian's clang is missing and cannot be installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MIN_RUNS = 2000  # about 1,000-2,000 inputs a second on one loaded core; 20 s gives far more


def test_handshake_fuzzer_runs_clean(tmp_path):
    if shutil.which("clang") is None and (os.geteuid() != 0 or shutil.which("apt-get") is None):
        pytest.skip("clang is not installed and cannot be (not root, or no apt-get): scripts/fuzz.sh not run")
    env = {**os.environ, "FUZZ_WORK": str(tmp_path), "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts/fuzz.sh"), "20"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    out = proc.stdout + proc.stderr
    if proc.returncode == 3:
        pytest.skip(f"scripts/fuzz.sh could not get clang: {out.strip()[-300:]}")
    assert proc.returncode == 0, out[-4000:]
    runs = re.search(r"stat::number_of_executed_units: (\d+)", out)
    assert runs is not None, out[-4000:]
    assert int(runs.group(1)) > MIN_RUNS, out[-2000:]
    assert not list(tmp_path.glob("crash-*")) and "ERROR: AddressSanitizer" not in out
