"""`seqtransfer experiment run FILE`: run (or resume) the grid of an experiment file."""

from __future__ import annotations

import argparse

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import not_negative, positive, whole
from seqtransfer.errors import SeqTransferError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=["run", "list", "search"],
        help="run: train what is missing; list: every cell of the grid (with --seeds, --only, --targets) and whether it is done, kept, under way or to train; "
        "search: the file's hyper-parameter searches on Ray Tune",
    )
    parser.add_argument("file", nargs="?", help="experiment YAML file, or the name of a shipped one (pretrand-table4); `seqtransfer experiment list` alone lists the shipped ones")
    parser.add_argument("--seeds", default="1", help="seeds: N for 1..N (default 1), or a range A-B, or a list A,B (a second grid beside the first, on other seeds)")
    parser.add_argument("--only", help="comma-separated method names to run (default: all)")
    parser.add_argument("--targets", help="comma-separated target names to run (default: all)")
    parser.add_argument("--results", default="results", help="results store folder (default ./results)")
    parser.add_argument(
        "--records",
        metavar="FILE",
        help="kept records (JSON lines, small: commit it): cells it holds from runs of the same settings are not trained again; every record of the experiment is written back to it. "
        "For search: the kept trials (each kept as it ends; one of the same settings is read back, not trained) and each search's summary (e.g. FILE.search.jsonl, not the grid's file)",
    )
    parser.add_argument(
        "--selected",
        metavar="FILE",
        help="run and list: each method on each target at the setting its search selected on dev, as kept in FILE (by `experiment search --records FILE`); "
        "the others at the file's own settings. Keep these cells in a --records file of their own",
    )
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run on Ray: auto, local, or HOST:PORT of a cluster head")
    parser.add_argument("--gpus-per-run", type=not_negative, default=0.0, help="with --ray, and for search: GPUs each run or trial asks Ray for (e.g. 0.25: four BiLSTM runs share a GPU; default 0)")
    parser.add_argument("--device", help="device of every run: auto, cpu, cuda, cuda:N, mps (does not change results' identity)")
    parser.add_argument(
        "--cpus-per-run",
        "--cpus-per-trial",
        dest="cpus_per_run",
        type=positive,
        default=1.0,
        help="with --ray, and for search: CPUs Ray gives each run or trial (default 1); a run's torch threads stay within them (0.5: two single-thread runs per core)",
    )
    parser.add_argument("--threads", type=whole(1), help="torch threads per run (does not change results' identity; default: the file's)")


def seed_list(text: str) -> list[int]:
    """``--seeds``: "3" is seeds 1, 2, 3; "2-3" is 2 and 3; "1,3" is 1 and 3."""
    hint = "--seeds 3 runs seeds 1, 2 and 3; --seeds 2-3 runs 2 and 3; --seeds 1,3 runs 1 and 3"
    try:
        if "-" in text:
            first, last = (int(part) for part in text.split("-", 1))
            seeds = list(range(first, last + 1))
        elif "," in text:
            seeds = sorted({int(part) for part in text.split(",") if part.strip()})
        else:
            seeds = list(range(1, int(text) + 1))
    except ValueError:
        raise SeqTransferError(f"--seeds {text!r} is not a number, a range or a list", hint=hint) from None
    if not seeds or seeds[0] < 1:
        raise SeqTransferError(f"--seeds must be at least 1, got {text}", hint=hint)
    return seeds


def run(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.experiments.backends import LocalBackend, RayBackend
    from seqtransfer.experiments.grid import spec_selection
    from seqtransfer.experiments.kept import add_kept, at_selection, merge, read_kept
    from seqtransfer.experiments.runner import run_experiment
    from seqtransfer.experiments.spec import load_experiment
    from seqtransfer.experiments.store import ResultsStore

    if arguments.file is None:
        if arguments.action != "list":
            raise SeqTransferError(f"experiment {arguments.action} needs an experiment file or name", hint="seqtransfer experiment list shows the shipped ones")
        return list_shipped()
    seeds = seed_list(arguments.seeds)
    spec = load_experiment(arguments.file)
    if arguments.threads:
        spec.overrides.append(f"train.threads={arguments.threads}")
    if arguments.device:
        spec.overrides.append(f"train.device={arguments.device}")
    only = set(named(arguments.only, spec.methods)) if arguments.only else set()
    unknown = only - set(spec.methods)
    if unknown:
        raise SeqTransferError(f"unknown method(s) {', '.join(sorted(unknown))}", path=arguments.file, hint=f"methods: {', '.join(spec.methods)}")
    if arguments.targets:
        wanted = named(arguments.targets, spec.targets)
        missing = [name for name in wanted if name not in spec.targets]
        if missing:
            raise SeqTransferError(f"unknown target(s) {', '.join(missing)}", path=arguments.file, hint=f"targets: {', '.join(spec.targets)}")
        spec.targets = {name: spec.targets[name] for name in wanted}
    store = ResultsStore(arguments.results)
    if arguments.action == "search":
        if arguments.selected:
            raise SeqTransferError("--selected is for experiment run and list: a search selects its own setting", hint="drop --selected")
        return search(arguments, spec, store, only)
    read_at_start = read_kept(arguments.records, spec.name) if arguments.records else []
    kept = use_selected_settings(spec, arguments.selected, read_at_start, arguments.records)
    if arguments.action == "list":
        from seqtransfer.experiments.status import grid_status

        lines = grid_status(spec, store, seeds, arguments.data_dir, only, kept)
        print("\n".join(lines))
        return merge(kept, at_selection(store.records(spec.name), spec_selection(spec)))
    if arguments.gpus_per_run and not arguments.ray:
        raise SeqTransferError("--gpus-per-run asks Ray for GPUs: it needs --ray", hint="add --ray local (or --ray HOST:PORT), or use --device for an in-process grid")
    backend = RayBackend(arguments.ray, cpus_per_run=arguments.cpus_per_run, gpus_per_run=arguments.gpus_per_run) if arguments.ray else LocalBackend()
    keep = (lambda record: add_kept(arguments.records, spec.name, [record])) if arguments.records else None  # each finished cell at once
    records = run_experiment(spec, store, seeds, backend, arguments.data_dir, only, log=lambda line: print(line, flush=True), kept=kept, on_record=keep)
    if arguments.records:  # cells dropped at the start stay dropped; those other grids wrote meanwhile stay
        add_kept(arguments.records, spec.name, records, read_at_start)
        print(f"{len(records)} records kept in {arguments.records}")
    return records


def use_selected_settings(spec, path: str | None, kept: list[dict], records: str | None) -> list[dict]:
    """``--selected FILE``: the settings the file's kept searches selected go into the grid's cells;
    with or without it, the ``--records`` file must hold cells of the settings this command runs
    (returns its records at those settings, see ``search_records.kept_at_selection``)."""
    from seqtransfer.experiments.grid import spec_selection
    from seqtransfer.experiments.search_records import kept_at_selection, selected_epoch_caps, selected_settings, shown_setting

    spec.selected = selected_settings(path, spec.name) if path else {}
    spec.selected_epochs = selected_epoch_caps(path, spec.name) if path else {}
    for (method, target), setting in sorted(spec.selected.items()):
        if method not in spec.methods:
            print(f"{method} / {target}: a search selected {shown_setting(setting)}, but the experiment file has no such method: left aside", flush=True)
        elif target in spec.targets:
            print(f"{method} / {target}: the searched setting {shown_setting(setting)}", flush=True)
    return kept_at_selection(kept, spec_selection(spec), records, log=lambda line: print(line, flush=True)) if records else kept


def search(arguments: argparse.Namespace, spec, store, only: set[str]) -> list[dict]:
    """``experiment search``: the file's searches on Ray Tune; its ``--records`` file is its own (kept trials, ``search_records.py``)."""
    from seqtransfer.experiments.search import run_searches

    log = lambda line: print(line, flush=True)  # noqa: E731
    address = arguments.ray or "local"
    return run_searches(spec, store, arguments.data_dir, only, address, arguments.cpus_per_run, log=log, gpus_per_trial=arguments.gpus_per_run or 0.0, records=arguments.records)


def list_shipped() -> list[dict]:
    """Print the experiments that ship with seqtransfer: name, title and what running them took here."""
    from seqtransfer.experiments.shipped import shipped_table

    rows = shipped_table()
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['title']}")
        print(f"{'':<{width}}  cost: {row['cost'] or 'not stated'}")
    print(f"\nrun one by name: seqtransfer experiment run {rows[0]['name']} --seeds 3 (see its file for the sources it trains first)")
    return rows


COMMAND = Command("run an experiment grid (resumable; in-process or on Ray) or list where its cells stand", arguments, run)


def named(text: str, known) -> list[str]:
    """Comma-separated names, where a name may hold commas itself ("TweeBank, no labels"): at each
    position the longest run of pieces that is a known name; a piece that starts none is returned
    as given (an unknown name)."""
    pieces = [piece.strip() for piece in text.split(",")]
    names, start = [], 0
    while start < len(pieces):
        end = next((end for end in range(len(pieces), start, -1) if ", ".join(pieces[start:end]) in known), start + 1)
        names.append(", ".join(pieces[start:end]))
        start = end
    return names
