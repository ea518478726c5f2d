"""`seqtransfer report FILE`: tables of an experiment's results next to the paper's numbers."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.errors import SeqTransferError

if TYPE_CHECKING:
    from seqtransfer.experiments.report_base import ReportSpec


SEARCHED_TITLE = ": each searched method at the setting its search selected"  # ends the title of a page of searched cells


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="experiment YAML file")
    parser.add_argument("--results", default="results", help="results store folder (default ./results)")
    parser.add_argument("--records", metavar="FILE", help="the records kept in FILE (by `experiment run --records`), with the store's cells FILE lacks or holds as it does (same scores)")
    parser.add_argument("--search-records", metavar="FILE", help="the search summaries kept in FILE (by `experiment search --records`), in place of the store's")
    parser.add_argument("--output", help="write the Markdown here (and a .csv beside it) instead of printing it")
    parser.add_argument("--dev", action="store_true", help="also add the tables of the dev split")
    parser.add_argument(
        "--notes-only",
        action="store_true",
        help="replace only the opening notes of the page at --output (what reproduces and what does not), keeping its tables: "
        "for a page whose runs' predictions are not on this machine, which a full render would lose the significance tests of",
    )
    parser.add_argument(
        "--sections",
        metavar="HEADINGS",
        help="replace only the page's sections whose heading starts with one of these (comma-separated, e.g. Paper), "
        "rendered afresh from the records, keeping the rest of the page at --output: a section that needs no predictions "
        "(the paper's table) on a page a full render would lose the significance tests of",
    )
    parser.add_argument("--trials", type=whole(1), default=10000, help="randomisation-test trials (default 10000)")


def split_section(spec, records, split: str) -> str:
    """The same tables on another split: the paper's dev numbers where the file gives them (``paper_dev``), no significance
    tests, and not the notes again (they read the page's main split)."""
    from seqtransfer.experiments.report import render_markdown

    paper = spec.paper_dev_results if split == "dev" else {}  # the paper's dev numbers where the file gives them
    other = dataclasses.replace(spec, title=f"{spec.title} — {split} split", paper_results=paper, significance_pairs=[], split=split, published=[], notes="")
    return render_markdown(other, records)


def run(arguments: argparse.Namespace) -> str:
    from seqtransfer.experiments.kept import at_selection, cell_key, merge, read_kept, selection_of
    from seqtransfer.experiments.report import render_csv, render_markdown, render_sources
    from seqtransfer.experiments.report_base import report_spec
    from seqtransfer.experiments.spec import load_experiment
    from seqtransfer.experiments.store import ResultsStore
    from seqtransfer.files import write_text

    experiment = load_experiment(arguments.file)
    kept = read_kept(arguments.records, experiment.name) if arguments.records else []
    spec = report_spec(experiment, trials=arguments.trials)
    if selection_of(kept):  # a records file of `experiment run --selected`: its own title and notes
        spec = dataclasses.replace(spec, title=spec.title + SEARCHED_TITLE, notes=experiment.selected_notes)
    if arguments.notes_only:
        return refresh_notes(arguments, spec)
    # the store's cells at the settings of the records file (searched ones for a file of `experiment run --selected`):
    # those the file lacks, and the file's own runs (their paths, any evidence added since); not other runs of its cells
    in_store = at_selection(ResultsStore(arguments.results).records(experiment.name), selection_of(kept))
    other_runs = store_differences(in_store, kept, arguments.records)
    stored = merge(kept, [record for record in in_store if cell_key(record) not in other_runs])
    records = [record for record in stored if not record.get("source")]
    text = render_markdown(spec, records) + cost_section(arguments, spec, records)
    sources = [record for record in stored if record.get("source")]
    if sources:
        text += "\n" + render_sources(sources)
    text += searches_section(arguments, experiment)
    if spec.split == "dev":  # the paper's numbers are dev scores: the main tables are dev, the test tables follow
        text += "\n" + split_section(spec, records, "test")
    elif arguments.dev:
        text += "\n" + split_section(spec, records, "dev")
    if arguments.sections:  # the page's named sections only; its CSV in full (means and the paper's numbers: no predictions)
        text = refresh_sections(arguments, text)
    elif arguments.output:
        write_text(arguments.output, text)
    else:
        print(text)
    if arguments.output:
        write_text(Path(arguments.output).with_suffix(".csv"), render_csv(spec, records))
    return text


def cost_section(arguments: argparse.Namespace, spec, records: list[dict]) -> str:
    """The cost section (empty where no run recorded its cost), and its figure beside ``--output``
    (not for ``--sections``, which rewrites the page's text alone)."""
    from seqtransfer.experiments.report import cost_points, render_cost

    points = cost_points(spec, records)
    figure = Path(arguments.output).with_suffix("").name + ".cost.svg" if arguments.output and points and not arguments.sections else None
    cost = render_cost(spec, records, figure)
    if figure:
        from seqtransfer.analysis.figures import cost_tradeoff, save_figure

        save_figure(cost_tradeoff(points), Path(arguments.output).with_suffix("").with_name(Path(arguments.output).with_suffix("").name + ".cost"))
    return "\n" + cost if cost else ""


def store_differences(in_store: list[dict], kept: list[dict], path: str | None) -> set[tuple]:
    """The cells of which the store holds another run than the records file (other scores: its
    settings changed and cells ran again without ``--records``, or another machine's runs), with one
    line if there are any: the page shows the file's."""
    from seqtransfer.experiments.kept import cell_key

    by_cell = {cell_key(record): record for record in kept}
    differing = [record for record in in_store if cell_key(record) in by_cell and score_pair(record) != score_pair(by_cell[cell_key(record)])]
    if differing:
        first = differing[0]
        cell = f"{first.get('method') or first.get('source')} / {first.get('target')} / seed {first.get('seed')}"
        count = f"{len(differing)} cell{'s' if len(differing) != 1 else ''}"
        fix = f"`experiment run ... --records {path}` keeps the store's"
        print(f"seqtransfer: the store holds other runs of {count} of {path} (first: {cell}): the page shows the file's; {fix}", file=sys.stderr)
    return {cell_key(record) for record in differing}


def score_pair(record: dict) -> tuple:
    return record.get("test"), record.get("dev")


def search_of(summary: dict) -> tuple[str, str]:
    """The method and target a search summary is of."""
    return summary["method"], summary["target"]


def searches_section(arguments: argparse.Namespace, experiment) -> str:
    """The hyper-parameter searches of the experiment ("" if none), in the file's order of methods and
    targets: those kept in ``--search-records`` alone where it is given, so that the page reads the
    same on a machine without the store's search folders; the store's for a page of the store alone
    (no ``--records``); none for a page of kept records without their searches' file."""
    from seqtransfer.experiments.search import render_searches, stored_summaries
    from seqtransfer.experiments.search_records import kept_summaries

    stored = stored_summaries(arguments.results, experiment.name)
    if arguments.search_records:
        if not Path(arguments.search_records).is_file():
            hint = "give --search-records the --records file of `seqtransfer experiment search` (e.g. NAME.search.jsonl)"
            raise SeqTransferError("no such search records file", path=arguments.search_records, hint=hint)
        searches = kept_summaries(arguments.search_records, experiment.name)
        missing = set(map(search_of, stored)) - set(map(search_of, searches))
        if missing:
            first = " / ".join(sorted(missing)[0])
            print(f"seqtransfer: the store holds {len(missing)} search(es) {arguments.search_records} lacks, left out (first: {first})", file=sys.stderr)
    elif not arguments.records:
        searches = stored
    else:
        searches = []
        if stored:
            count = f"{len(stored)} search{'es' if len(stored) != 1 else ''}"
            print(f"seqtransfer: the store holds {count} of {experiment.name}, left out: pass their kept file as --search-records", file=sys.stderr)
    methods, targets = list(experiment.methods), list(experiment.targets)
    place = lambda name, names: names.index(name) if name in names else len(names)  # noqa: E731
    searches = sorted(searches, key=lambda summary: (place(summary["method"], methods), place(summary["target"], targets), *search_of(summary)))
    return "\n" + render_searches(searches) if searches else ""


def refresh_notes(arguments: argparse.Namespace, spec: ReportSpec) -> str:
    """``--notes-only``: the page at ``--output`` with the file's notes in place of its old ones."""
    from seqtransfer.experiments.report_notes import replace_notes
    from seqtransfer.files import write_text

    if not arguments.output:
        raise SeqTransferError("--notes-only rewrites the notes of an existing page: pass it as --output", hint="pass --output PAGE.md, a page seqtransfer report wrote")
    page = Path(arguments.output)
    if not page.is_file():
        raise SeqTransferError("--notes-only rewrites the notes of an existing page, and there is none here", path=page, hint="render the page in full first (drop --notes-only)")
    old = page.read_text(encoding="utf-8")
    if old.startswith(f"# {spec.title}{SEARCHED_TITLE}"):  # the page of searched cells, asked for the file's own notes
        raise SeqTransferError("the page is of cells at searched settings: its notes are the file's selected_notes", path=page, hint="pass the page's records file as --records")
    text = replace_notes(old, spec)
    write_text(page, text)
    return text


def refresh_sections(arguments: argparse.Namespace, rendered: str) -> str:
    """``--sections``: the page at ``--output`` with the named sections replaced by those of
    ``rendered`` (the same render, flags and all), in order of appearance (a page's dev split has its
    own "Paper" section); every other line kept."""
    from seqtransfer.files import write_text

    page = Path(arguments.output) if arguments.output else None
    if page is None or not page.is_file():
        raise SeqTransferError("--sections rewrites sections of an existing page: pass it as --output", path=page, hint="render the page in full first (drop --sections)")
    old = page.read_text(encoding="utf-8")
    title, rendered_title = old.partition("\n")[0], rendered.partition("\n")[0]
    if title != rendered_title:  # another experiment's page, or the searched cells' page and the file's records
        raise SeqTransferError(f"the page is titled {title!r}, the render {rendered_title!r}", path=page, hint="pass the page's own experiment file and --records")
    headings = [heading.strip() for heading in arguments.sections.split(",") if heading.strip()]
    text = old
    for heading in headings:
        fresh, stale = page_sections(rendered, heading), page_sections(text, heading)
        if not stale or len(fresh) != len(stale):
            found = f"{len(stale)} on the page, {len(fresh)} in the render"
            raise SeqTransferError(f"no matching '## {heading}' sections ({found})", path=page, hint="name a section heading of the page, and render with the flags it was rendered with (--dev)")
        for (start, end), (new_start, new_end) in reversed(list(zip(stale, fresh))):  # from the end: earlier offsets stay valid
            text = text[:start] + rendered[new_start:new_end] + text[end:]
    write_text(page, text)
    return text


def page_sections(text: str, heading: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each "## HEADING..." section of a page: up to the next "## " or "# " heading."""
    sections = []
    for match in re.finditer(rf"^## {re.escape(heading)}.*$", text, flags=re.MULTILINE):
        after = re.search(r"^#{1,2} ", text[match.end() :], flags=re.MULTILINE)  # the next heading of this level or above
        sections.append((match.start(), match.end() + after.start() if after else len(text)))
    return sections


COMMAND = Command("render an experiment's results (mean ± std, aNRG, significance) next to the paper's", arguments, run)
