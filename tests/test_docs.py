"""The documentation site builds without a warning, and the README's links into it exist.

`mkdocs build --strict` fails on any warning: a broken link or anchor, a page missing from the nav
(mkdocs.yml `validation`), a hook (docs/hooks/: the CLI and settings references) or a mkdocstrings
page that cannot render. The README links into docs/*.md with relative links, so that they work on
GitHub too; each must name a file that exists.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def readme_links() -> list[str]:
    return LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_readme_links_into_docs_exist():
    into_docs = [link for link in readme_links() if link.startswith("docs/")]
    assert into_docs, "the README links to no page of the documentation (docs/*.md)"
    missing = [link for link in into_docs if not (ROOT / link.split("#")[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_readme_relative_links_exist():
    relative = [link for link in readme_links() if not re.match(r"^[a-z]+:", link) and not link.startswith("#")]
    missing = [link for link in relative if not (ROOT / link.split("#")[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_site_builds_without_warnings(tmp_path):
    missing = [name for name in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python") if importlib.util.find_spec(name.split(".")[0]) is None]
    if missing:
        pytest.skip(f"the documentation tools are not installed ({', '.join(missing)}): pip install -e '.[docs]'")
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about MkDocs 2.0 (not a build warning)
    finished = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=300, env=environment)
    output = finished.stdout + finished.stderr
    warnings = [line for line in output.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert finished.returncode == 0 and not warnings, "\n".join(warnings) or output[-4000:]
    site = tmp_path / "site"
    for page in ("index.html", "cli/index.html", "settings/index.html", "api/index.html", "results/index.html"):
        assert (site / page).is_file(), f"the site has no {page}"
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    from seqtransfer.commands import COMMANDS

    absent = [name for name in COMMANDS if f'id="seqtransfer-{name}"' not in cli]
    assert not absent, f"the CLI reference has no section for {absent}"


def test_every_results_page_has_a_row_in_the_results_index():
    """docs/results/README.md's table names each page beside it (what it holds and the command that makes it)."""
    index = (ROOT / "docs" / "results" / "README.md").read_text(encoding="utf-8")
    pages = [path.name for path in (ROOT / "docs" / "results").glob("*.md") if path.name != "README.md"]
    assert pages and [name for name in pages if f"| `{name}`" not in index] == []


def test_every_results_page_opens_with_what_reproduces_and_what_does_not():
    """A reader checks our numbers against the papers first: each page says near its top what reproduces and what does not."""
    pages = [path for path in (ROOT / "docs" / "results").glob("*.md") if path.name != "README.md"]
    opening = {path.name: "\n".join(path.read_text(encoding="utf-8").splitlines()[:30]) for path in pages}
    assert pages and [name for name, text in opening.items() if "reproduces and what does not" not in text] == []
