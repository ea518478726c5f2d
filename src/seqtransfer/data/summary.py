"""Per-split statistics of a dataset (``seqtransfer datasets``): sentences, tokens, label-set sizes."""

from __future__ import annotations

from pathlib import Path

from seqtransfer.data.corpus import count_tokens, label_set
from seqtransfer.data.registry import DatasetSpec, load_split, resolve_spec


def summarize(name: str | DatasetSpec, data_dir: str | Path | None = None) -> list[dict]:
    """One row per split: dataset, split, sentences, tokens and ``<task> labels`` per task."""
    spec = resolve_spec(name)
    rows = []
    for split in spec.split_names():
        sentences = load_split(spec, split, data_dir)
        row: dict = {"dataset": spec.name, "split": split, "sentences": len(sentences), "tokens": count_tokens(sentences)}
        for task, column in spec.tasks.items():
            row[f"{task} labels"] = len(label_set(sentences, column))
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    """Rows as plain aligned text: a header line, then one line per row (numbers right-aligned).

    Columns are the union of the rows' keys in first-seen order; a missing value prints as ``-``.
    """
    if not rows:
        return ""
    headers = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[format_cell(row.get(header)) for header in headers] for row in rows]
    widths = [max(len(header), *(len(line[index]) for line in cells)) for index, header in enumerate(headers)]
    numeric = [all(isinstance(row.get(header), (int, float)) for row in rows if header in row) for header in headers]
    lines = [align(headers, widths, numeric)]
    lines += [align(line, widths, numeric) for line in cells]
    return "\n".join(lines)


def format_cell(value: object) -> str:
    """Text of one cell: thousands separators for integers, ``-`` for a missing value."""
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def align(cells: list[str], widths: list[int], right: list[bool]) -> str:
    """One line of the table, two spaces between columns."""
    padded = [cell.rjust(width) if is_right else cell.ljust(width) for cell, width, is_right in zip(cells, widths, right)]
    return "  ".join(padded).rstrip()
