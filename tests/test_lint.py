"""The code passes the linter and the formatter configured in pyproject.toml ([tool.ruff]): run with the tests, so CI runs them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("src", "tests", "benchmarks", "scripts", "docs")


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
    finished = subprocess.run([*command, "check", *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-2000:]


def test_ruff_format_leaves_the_code_as_it_is():
    command = ruff()
    if command is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    finished = subprocess.run([*command, "format", "--check", *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, "run `ruff format` on: " + finished.stdout[-4000:] + finished.stderr[-2000:]
