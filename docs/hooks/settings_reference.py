"""MkDocs hook: the settings reference page (``settings.md``), rendered at build time from the code.

Every setting of a run is a field of a dataclass in ``src/seqtransfer/config_sections.py`` (one per
section: data, model, train, transfer, multitask) with its type, its default and a comment saying
what it does. This hook reads that file (``ast`` for the fields, ``tokenize`` for the comments;
nothing is imported) and writes one table per section, so the page follows the code. Registered in
``mkdocs.yml`` (``hooks:``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from mkdocs.structure.files import File, Files

PAGE = "settings.md"
SOURCE = Path("src/seqtransfer/config_sections.py")  # relative to mkdocs.yml's folder


def comments_by_line(source: str) -> dict[int, str]:
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


def default_text(value: ast.expr | None) -> str:
    """The default as written: ``field(default_factory=...)`` as the value it makes."""
    if value is None:
        return ""
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
        for keyword in value.keywords:
            if keyword.arg == "default_factory":
                factory = keyword.value
                if isinstance(factory, ast.Lambda):
                    return ast.unparse(factory.body)
                return {"list": "[]", "dict": "{}"}.get(ast.unparse(factory), ast.unparse(factory) + "()")
    return ast.unparse(value)


def cell(text: str) -> str:
    """Table-cell text: pipes escaped (the comments list choices as ``a | b``), underscores and stars left to code spans."""
    text = text.replace("|", "\\|")
    return re.sub(r"(?<![`\w])([*_<>])", r"\\\1", text)


def section_rows(node: ast.ClassDef, comments: dict[int, str]) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The class's docstring and (name, type, default, meaning) for each field."""
    rows = []
    previous_end = node.body[0].end_lineno if node.body else node.lineno
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            above = []
            line = statement.lineno - 1
            while line > previous_end and line in comments:
                above.insert(0, comments[line])
                line -= 1
            meaning = " — ".join(part for part in (" ".join(above), comments.get(statement.end_lineno, "")) if part)
            rows.append((statement.target.id, ast.unparse(statement.annotation), default_text(statement.value), meaning))
        previous_end = statement.end_lineno
    return ast.get_docstring(node) or "", rows


def render(root: Path) -> str:
    source = (root / SOURCE).read_text(encoding="utf-8")
    tree = ast.parse(source)
    comments = comments_by_line(source)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    run_config = classes["RunConfig"]
    lines = [
        "# Settings",
        "",
        "Every setting of a run, generated from `src/seqtransfer/config_sections.py` each time the site is built.",
        "A setting is a dotted key: in an override on the command line (`seqtransfer train ... train.learning_rate=0.01",
        "model.hidden=400`), in a `--config` YAML file (`train: {learning_rate: 0.01}`) and in a run directory's",
        "`config.yaml`, which holds every setting filled in. An unknown key is an error that lists the valid ones.",
        "Settings marked *filled* in their meaning are written by seqtransfer, not chosen.",
        "",
    ]
    for statement in run_config.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        section, class_name = statement.target.id, ast.unparse(statement.annotation)
        docstring, rows = section_rows(classes[class_name], comments)
        lines += [f"## `{section}` {{#{section}}}", ""]
        if docstring:
            lines += [" ".join(docstring.split()), ""]
        lines += ["| setting | type | default | what it does |", "|---|---|---|---|"]
        for name, annotation, default, meaning in rows:
            lines.append(f"| `{section}.{name}` | `{annotation}` | `{default}` | {cell(meaning)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - MkDocs' hook signature
    root = Path(config.config_file_path).parent
    files.append(File.generated(config, PAGE, content=render(root)))
    return files
