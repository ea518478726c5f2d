"""The code passes the linter configured in pyproject.toml ([tool.ruff]): run with the tests, so CI runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ruff() -> list[str] | None:
    beside = Path(sys.executable).with_name("ruff")  # installed by the test extra into the same environment
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("ruff")
    return [found] if found else None


def test_ruff_check_passes():
    command = ruff()
    if command is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    finished = subprocess.run([*command, "check", "src", "tests", "benchmarks", "scripts"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]
