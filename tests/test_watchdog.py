"""The suite's hang watchdog (tests/watchdog.py) names the test and shows where its tasks wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.watchdog import diagnose


def test_diagnosis_names_the_test_and_the_waiting_task(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"

    async def waits_forever() -> None:
        await asyncio.Event().wait()

    async def main() -> None:
        task = asyncio.create_task(waits_forever(), name="stuck-one")
        await asyncio.sleep(0)
        with report.open("w") as out:
            diagnose("tests/x.py::test_y", 600, out)
        task.cancel()

    asyncio.run(main())
    text = report.read_text()
    assert "tests/x.py::test_y still running after 600 s" in text
    assert "--- task stuck-one" in text and "in waits_forever" in text
    assert "Thread" in text or "Current thread" in text  # faulthandler's thread stacks
