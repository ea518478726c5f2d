"""Sizes (issue 49, point 7): no module of src/seqtransfer over 400 lines, no function over 50.

A module or function that grows past these is split where its parts have names of their own (see
docs/architecture.md); the limits are counted in source lines, docstrings and comments included."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "seqtransfer"
MODULE_LINES = 400
FUNCTION_LINES = 50


def modules() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_no_module_is_over_400_lines():
    long = [f"{path.relative_to(SOURCE)}: {lines}" for path in modules() if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES]
    assert not long, f"modules over {MODULE_LINES} lines: {long}"


def test_no_function_is_over_50_lines():
    long = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (lines := node.end_lineno - node.lineno + 1) > FUNCTION_LINES:
                long.append(f"{path.relative_to(SOURCE)}:{node.lineno} {node.name}: {lines}")
    assert not long, f"functions over {FUNCTION_LINES} lines: {long}"
