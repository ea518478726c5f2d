"""The committed results pages agree with their records and experiment files wherever that needs no
run's predictions: the paper's table (our means beside the paper's numbers, NRGs) of each page is
what `seqtransfer report` renders from the page's records file and its experiment file today. A
changed paper number, reference or method name in a file then fails here until the page is
rendered again (in full, or `report --sections Paper`)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from seqtransfer.cli import run
from seqtransfer.commands.report import page_sections

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"
PAGES = sorted(
    page.stem
    for page in RESULTS.glob("*.md")
    if (RESULTS / f"{page.stem}.records.jsonl").is_file() and (EXPERIMENTS / f"{page.stem}.yaml").is_file() and page_sections(page.read_text(encoding="utf-8"), "Paper")
)
# Pages known to be behind their records, each with why (its notes say so too).
BEHIND = {"pretrand_table5": "its tables (2026-11-22) predate its records (later code); a 3-seed re-run with the current code replaces both (issue 53)"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=BEHIND[name])) if name in BEHIND else name for name in PAGES])
def test_a_committed_pages_paper_table_is_what_its_records_and_file_give(name, tmp_path):
    page = (RESULTS / f"{name}.md").read_text(encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rendered = run(["report", str(EXPERIMENTS / f"{name}.yaml"), "--records", str(RESULTS / f"{name}.records.jsonl"), "--trials", "10", "--results", str(tmp_path / "none")])
    (start, end), fresh = page_sections(page, "Paper")[0], page_sections(rendered, "Paper")
    assert fresh and page[start:end].strip() == rendered[fresh[0][0] : fresh[0][1]].strip()


def test_pages_with_a_paper_table_are_found():
    assert {"pretrand_table4", "mutspad_table2", "totune_table2"} <= set(PAGES)
