"""A report's opening notes ("What reproduces and what does not"): rendered from the experiment
file's ``notes``, and replaced on a page rendered before without rendering its tables again."""

from __future__ import annotations

from collections.abc import Sequence

from seqtransfer.errors import SeqTransferError
from seqtransfer.experiments.report_base import ReportSpec


def notes_lines(notes: str | Sequence[str]) -> list[str]:
    """The report's opening notes: a string as one paragraph after the heading, a list as one bullet a line."""
    heading = "**What reproduces and what does not.**"
    if isinstance(notes, str):
        return ["", f"{heading} {notes.strip()}"] if notes.strip() else []
    items = [str(item).strip() for item in notes if str(item).strip()]
    return ["", heading, "", *(f"- {item}" for item in items)] if items else []


def replace_notes(page: str, spec: ReportSpec) -> str:
    """``page`` (a report rendered before) with its opening notes replaced by ``spec``'s and the rest
    kept as it is: for a page whose runs' predictions are not on this machine, where a full render
    would lose its significance tests. Notes sit between the first "Experiment ..." line and the next
    "## " heading; the page's other split (a second "Experiment ..." line) has none; a page without
    them is one error line."""
    lines, kept, index = page.split("\n"), [], 0
    starts = [number for number, line in enumerate(lines) if line.startswith(f"Experiment `{spec.experiment}`")]
    if not starts:
        raise SeqTransferError(f"the page is not experiment {spec.experiment}'s report (no line names it)", hint="give the page `seqtransfer report` wrote for this file, or drop --notes-only")
    for part, start in enumerate(starts):
        end = next((number for number in range(start + 1, len(lines)) if lines[number].startswith("## ")), None)
        if end is None:
            raise SeqTransferError(f"the page has no table heading after line {start + 1}: not a whole report", hint="render the page in full (seqtransfer report FILE --output PAGE)")
        kept += [*lines[index : start + 1], *(notes_lines(spec.notes) if part == 0 else []), ""]
        index = end
    return "\n".join([*kept, *lines[index:]])
