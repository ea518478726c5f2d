"""seqtransfer vs flair 0.15.1: the same BiLSTM-CRF tagger on the same data, in one invocation.

    nice -n 10 python benchmarks/compare_flair.py --datasets wnut17 conll2003 --epochs 3

Installs flair 0.15.1 (on top of torch 2.13.0 CPU) into its own venv, ``benchmarks/.flair-venv``,
the first time. Then, for each dataset, runs each tool in a process of its own
(``seqtransfer_runner.py`` with this interpreter, ``flair_runner.py`` with the flair venv's),
both on 2 torch threads, with the same sentences, IOB2 tags, word vocabulary and initial word
vectors, and prints per tool: median training epoch seconds and training tokens/s (training
batches only), test-set inference tokens/s at the tool's best batch size, peak resident memory,
and the dev and test entity F1 after the same number of epochs, both scored by
``seqtransfer.data.metrics.evaluate`` on the predicted tags. Then the ratios
seqtransfer / flair. ``benchmarks/README.md`` lists what still differs between the two setups.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from budget import PROGRESS, partial_result, run_runner, runner_budget, share_left, training_speed
from seqtransfer_runner import INFERENCE_BATCH_SIZES, benchmark_config, load_benchmark_data

from seqtransfer.data.metrics import evaluate
from seqtransfer.data.schemes import chunks
from seqtransfer.data.vocabulary import PADDING, UNKNOWN
from seqtransfer.training.vocabularies import prepare_vocabularies

BENCHMARKS = Path(__file__).resolve().parent
FLAIR_VERSION = "0.15.1"
TORCH_VERSION = "2.13.0"
DEFAULT_DATA = BENCHMARKS.parent.parent / "shared" / "datasets"


def flair_venv_ready(python: Path) -> bool:
    """True when ``python`` imports flair 0.15.1 on this interpreter's torch (2.13.0 here; a GPU
    machine's venv, made by scripts/gpu_bench.sh, shares its system torch)."""
    return python.exists() and flair_venv_problem(python) is None


def flair_venv_problem(python: Path) -> str | None:
    """Why ``python`` cannot run the flair side (the end of its error), or None."""
    return peer_venv_problem(python, "flair", FLAIR_VERSION)


def peer_venv_problem(python: Path, package: str, version: str) -> str | None:
    """Why ``python`` cannot run a peer library's side (the end of its error), or None: it must import
    ``package`` at ``version`` on this interpreter's torch."""
    import torch

    check = f"import {package}, torch; assert {package}.__version__ == '{version}', {package}.__version__; assert torch.__version__ == '{torch.__version__}', torch.__version__"
    result = subprocess.run([str(python), "-c", check], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stderr.strip().splitlines() or ["no output"])[-1]


def ensure_flair_venv(venv: Path) -> Path:
    """The flair venv's python, creating the venv first if needed (``ensure_peer_venv``; flair asks only for torch>=1.13.1)."""
    return ensure_peer_venv(venv, "flair", FLAIR_VERSION, "about 1-2 minutes")


def ensure_peer_venv(venv: Path, package: str, version: str, duration: str) -> Path:
    """The python of a peer library's venv (flair, fastai), creating the venv first if needed.

    torch 2.13.0 goes in first and stays pinned while the library is installed: flair and fastai
    ask only for a minimum torch, and a pip free to choose would fetch a newer, several-GB CUDA build.
    """
    python = venv / "bin" / "python"
    if python.exists() and peer_venv_problem(python, package, version) is None:
        return python
    started = time.perf_counter()
    print(f"installing {package} {version} into {venv} ({duration}) ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"torch=={TORCH_VERSION}"], check=True)
    subprocess.run([*pip, f"{package}=={version}", f"torch=={TORCH_VERSION}"], check=True)
    problem = peer_venv_problem(python, package, version)
    if problem:
        raise SystemExit(f"{package} {version} with torch {TORCH_VERSION} is not importable in {venv}: {problem}")
    print(f"{package} venv ready in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return python


def export_for_flair(arguments: argparse.Namespace, dataset: str, folder: Path):
    """Write flair's input (tokens, gold spans, vocabularies, initial vectors); return the task data.

    The word vocabulary and initial matrix are the ones the seqtransfer run builds (same seed):
    flair's WordEmbeddings gets every row except padding, with seqtransfer's <unk> row last,
    where flair keeps its unknown word.
    """
    config = benchmark_config(dataset, arguments.threads, arguments.max_train_sentences, arguments.data_dir, arguments.seed, embeddings=arguments.embeddings, batch_size=arguments.train_batch_size)
    data = load_benchmark_data(config, arguments.max_evaluation_sentences)
    vocabularies, matrix = prepare_vocabularies(config, data, log=lambda message: None)
    words = vocabularies.words.items
    if words[:2] != [PADDING, UNKNOWN]:
        raise SystemExit(f"unexpected word vocabulary specials: {words[:2]}")
    np.save(folder / "vectors.npy", np.concatenate([matrix[2:], matrix[1:2]]))  # (V - 1, D)
    model, train = config.model, config.train
    settings = {
        "seed": train.seed,
        "learning_rate": train.learning_rate,
        "momentum": train.momentum,
        "learning_rate_decay": train.learning_rate_decay,
        "gradient_clip": train.gradient_clip,
        "batch_size": train.batch_size,
        "dropout": model.dropout,
        "hidden": model.hidden,
        "char_dimension": model.char_dimension,
        "char_hidden": model.char_hidden,
    }
    characters = [character for character in vocabularies.characters.items if character not in (PADDING, UNKNOWN)]
    document = {"dataset": dataset, "settings": settings, "words": words[2:], "characters": characters, "splits": splits_for_flair(data)}
    (folder / "data.json").write_text(json.dumps(document), encoding="utf-8")
    return data


def splits_for_flair(data) -> dict:
    """Tokens and gold spans ``[type, start, end)`` of each split, as flair's runners read them."""
    return {split: {"tokens": data.tokens(split), "spans": [chunks(tags) for tags in data.labels(split)]} for split in ("train", "dev", "test")}


def runner_environment(threads: int) -> dict:
    """A runner's environment: ``threads`` for OpenMP and MKL, nothing downloaded."""
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def run_json(command: list[str], threads: int, timeout: float | None = None) -> dict:
    """Run a runner process and parse the JSON line it prints last (its stderr passes through, its
    progress lines are shown); ``timeout``: seconds, after which it is killed and the result is what its
    progress lines measured (``budget.partial_result``: ``killed`` true, no inference, no scores)."""
    output, killed = run_runner(command, runner_environment(threads), timeout, echo=(PROGRESS,))
    if killed:
        print(f"{Path(command[1]).name} killed: its {timeout:.0f} s of the time budget ran out", file=sys.stderr, flush=True)
        return partial_result(output)
    return json.loads(output.strip().splitlines()[-1])


def summarize(result: dict, data, predictions_path: Path) -> dict:
    """Median epoch time, speeds and the dev/test F1 of one runner's result (a killed runner's: its training speed only)."""
    median, speed = training_speed(result)
    row = {**result, "epoch_seconds_median": median, "train_tokens_per_second": speed}
    if result.get("killed"):
        return {**row, "inference_tokens_per_second": None, "best_inference_batch": None, "dev_f1": None, "test_f1": None}
    predictions = json.loads(predictions_path.read_text(encoding="utf-8"))
    scores = {split: evaluate(data.labels(split), predictions[split], data.metric)["f1"] for split in ("dev", "test")}
    inference = {int(size): seconds for size, seconds in result["inference_seconds"].items()}
    best_batch = min(inference, key=inference.get)
    return {**row, "inference_tokens_per_second": result["test_tokens"] / inference[best_batch], "best_inference_batch": best_batch, "dev_f1": scores["dev"], "test_f1": scores["test"]}


def runner_options(arguments: argparse.Namespace) -> list[str]:
    """The options both runners take: epochs, threads, device, inference batch sizes."""
    return ["--epochs", str(arguments.epochs), "--threads", str(arguments.threads), "--device", arguments.device, "--batch-sizes", *map(str, arguments.batch_sizes)]


def seqtransfer_options(arguments: argparse.Namespace, dataset: str) -> list[str]:
    """What the seqtransfer runner reads itself (flair gets the same through data.json): dataset, seed, subsets, data folder."""
    options = ["--dataset", dataset, "--seed", str(arguments.seed)]
    if arguments.max_train_sentences:
        options += ["--max-train-sentences", str(arguments.max_train_sentences)]
    if arguments.max_evaluation_sentences:
        options += ["--max-evaluation-sentences", str(arguments.max_evaluation_sentences)]
    if arguments.data_dir:
        options += ["--data-dir", arguments.data_dir]
    if getattr(arguments, "embeddings", None):
        options += ["--embeddings", arguments.embeddings]
    if getattr(arguments, "train_batch_size", None):
        options += ["--train-batch-size", str(arguments.train_batch_size)]
    return options


def run_tools(dataset: str, commands: dict[str, list[str]], data, folder: Path, threads: int, finished=None, deadline: float | None = None, same_epochs: bool = True) -> list[dict]:
    """Run each tool's runner in turn (seqtransfer first), score its predictions; check both read the
    same data. Each tool's measurements are printed (one JSON line) and written to
    ``FOLDER/TOOL-result.json`` the moment it ends, and handed to ``finished`` (``--json``): a later
    tool's failure or time-out loses only its own.

    ``deadline`` (a ``time.perf_counter()`` value): each runner gets an equal share of what is left
    until then, as ``--time-budget`` (a tenth less, at least 5 s less: its start-up) within which it
    trains whole epochs while another fits, else part of one (``budget.Budget``), and as a hard limit:
    a runner still running at the end of its share is killed, and its row holds what its progress
    lines measured (its training speed; ``killed``). ``same_epochs``: the peer trains as many epochs
    as seqtransfer did (not for the fine-tuned encoders: their schedule's length is fixed)."""
    rows = []
    for tool, command in commands.items():
        print(f"{dataset}: running {tool} ...", file=sys.stderr, flush=True)
        predictions = folder / f"{tool}-predictions.json"
        share = max(share_left(deadline, len(commands) - len(rows)), 1.0) if deadline else None
        if share:  # counted from the process's start (--started-at), as the kill is
            command = [*command, "--time-budget", f"{runner_budget(share):.0f}", "--started-at", f"{time.time():.3f}"]
        if rows and same_epochs and rows[0].get("epochs"):
            command = [*command, "--epochs", str(rows[0]["epochs"])]
        result = run_json([*command, "--predictions", str(predictions)], threads, share)
        rows.append(summarize({"tool": tool, "dataset": dataset, **result}, data, predictions))
        (folder / f"{tool}-result.json").write_text(json.dumps(rows[-1], indent=1), encoding="utf-8")
        print(f"{dataset}: {tool} finished: {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
        if finished:
            finished(rows[-1])
    ended = [row for row in rows if not row.get("killed")]
    if len(ended) == 2 and (ended[0]["train_tokens"] != ended[1]["train_tokens"] or ended[0]["test_tokens"] != ended[1]["test_tokens"]):
        raise SystemExit(f"{dataset}: the two tools did not get the same data: {rows}")
    if len(ended) == 2 and (ended[0]["epochs"], ended[0].get("epoch_cut")) != (ended[1]["epochs"], ended[1].get("epoch_cut")):
        print(f"{dataset}: WARNING: the time budget stopped the tools at different points ({ended[0]['epochs']} and {ended[1]['epochs']} epochs): F1 not comparable", file=sys.stderr, flush=True)
    return rows


def compare_dataset(arguments: argparse.Namespace, dataset: str, flair_python: Path, folder: Path, finished=None, time_budget: float | None = None) -> list[dict]:
    """One dataset, both tools; ``time_budget``: seconds for all of it (``run_tools``)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    data = export_for_flair(arguments, dataset, folder)
    common = runner_options(arguments)
    commands = {
        "seqtransfer": [sys.executable, str(BENCHMARKS / "seqtransfer_runner.py"), *seqtransfer_options(arguments, dataset), *common],
        "flair": [str(flair_python), str(BENCHMARKS / "flair_runner.py"), "--input", str(folder), *common],
    }
    return run_tools(dataset, commands, data, folder, arguments.threads, finished, started + time_budget if time_budget else None)


def cell(value, width: int, form: str = ".0f") -> str:
    """A table cell: ``value`` in ``form``, or "-" where it was not measured (a killed runner's)."""
    return f"{value:{width}{form}}" if value is not None else f"{'-':>{width}}"


def print_table(rows: list[dict]) -> None:
    header = (
        f"{'tool':12} {'dataset':10} {'tokens':>8} {'epochs':>6} {'epoch s':>8} {'train tok/s':>12} {'infer tok/s':>12} {'batch':>6} "
        f"{'peak MB':>8} {'train MB':>8} {'GPU MB':>7} {'dev F1':>7} {'test F1':>7}"
    )
    print(header)
    for row in rows:
        epochs = f"{len(row['epoch_seconds'])}{'*' if any(row.get('epoch_cut') or []) else ''}{' killed' if row.get('killed') else ''}"
        print(
            f"{row['tool']:12} {row['dataset']:10} {cell(row.get('train_tokens'), 8, 'd')} {epochs:>6} {cell(row['epoch_seconds_median'], 8, '.2f')} "
            f"{cell(row['train_tokens_per_second'], 12, ',.0f')} {cell(row['inference_tokens_per_second'], 12, ',.0f')} {cell(row['best_inference_batch'], 6, 'd')} "
            f"{cell(row.get('peak_rss_mb'), 8)} {cell(row.get('train_peak_rss_mb'), 8)} {cell(row.get('gpu_peak_mb'), 7)} {cell(row['dev_f1'], 7, '.2f')} {cell(row['test_f1'], 7, '.2f')}"
        )
    if any(any(row.get("epoch_cut") or []) or row.get("killed") for row in rows):
        print("(* the time budget cut the last epoch short: tokens/s over the sentences it trained; killed: the runner's share ran out, its training speed is from its progress lines)")


def ratio(ours: dict, theirs: dict, key: str) -> float:
    """ours / theirs of one measurement, NaN where either was not measured."""
    return ours[key] / theirs[key] if ours.get(key) and theirs.get(key) else float("nan")


def print_ratios(rows: list[dict]) -> None:
    print("\nseqtransfer / flair (speed: >1 = seqtransfer faster; memory: <1 = seqtransfer smaller)")
    print(f"{'dataset':10} {'train speed':>12} {'infer speed':>12} {'peak MB':>8} {'train MB':>8}")
    for ours, theirs in zip(rows[0::2], rows[1::2]):
        print(
            f"{ours['dataset']:10} {ratio(ours, theirs, 'train_tokens_per_second'):12.2f} {ratio(ours, theirs, 'inference_tokens_per_second'):12.2f} "
            f"{ratio(ours, theirs, 'peak_rss_mb'):8.2f} {ratio(ours, theirs, 'train_peak_rss_mb'):8.2f}"
        )


def comparison_parser(description: str, datasets: list[str], batch_sizes: list[int], epochs_help: str) -> argparse.ArgumentParser:
    """The options every seqtransfer-against-flair comparison takes (``compare_flair_encoder.py`` adds its own)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--datasets", nargs="+", default=datasets)
    parser.add_argument("--epochs", type=int, default=3, help=epochs_help)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]: both tools on that device (GPU timings need a machine with one)")
    parser.add_argument("--seed", type=int, default=1, help="seed of both tools (flair gets it through data.json)")
    parser.add_argument("--max-train-sentences", type=int, default=None, help="keep the first N training sentences (quick checks)")
    parser.add_argument("--max-evaluation-sentences", type=int, default=None, help="keep the first N dev and test sentences (quick checks)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=batch_sizes, help="inference batch sizes to try")
    parser.add_argument("--data-dir", default=os.environ.get("SEQTRANSFER_DATA") or str(DEFAULT_DATA))
    parser.add_argument("--flair-venv", default=str(BENCHMARKS / ".flair-venv"))
    parser.add_argument("--no-install", action="store_true", help="use --flair-venv as it is, and stop with its error if it cannot run flair (no network)")
    parser.add_argument("--work-dir", default=None, help="keep flair's input and both tools' predictions here (default: a temporary folder)")
    parser.add_argument("--json", default=None, help="also write all measurements to this JSON file")
    return parser


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = comparison_parser(__doc__.split("\n\n")[0], ["wnut17", "conll2003"], INFERENCE_BATCH_SIZES, "training epochs per tool (the median of their times is reported)")
    parser.add_argument("--embeddings", default=None, help="a word-vector text file instead of the GloVe 6B 50d package (scripts/gpu_bench_bundle.sh writes its rows)")
    parser.add_argument("--train-batch-size", type=int, default=None, help="training sentences per batch, both tools (default: seqtransfer's train.batch_size)")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds for the whole invocation, shared equally by the datasets; in each, seqtransfer gets half, then flair what is left, "
        "each training whole epochs while another fits, else part of one, and killed at the end of its share (run_tools)",
    )
    return parser.parse_args(argv)


def subset_description(arguments: argparse.Namespace) -> str:
    """ ", first N training sentences, first M dev/test sentences" for a quick check, else ""."""
    subset = f", first {arguments.max_train_sentences} training sentences" if arguments.max_train_sentences else ""
    return subset + (f", first {arguments.max_evaluation_sentences} dev/test sentences" if arguments.max_evaluation_sentences else "")


def budget_description(arguments: argparse.Namespace) -> str:
    """ " (at most: time budget N s)" with ``--time-budget``, else ""."""
    return f" (at most: time budget {arguments.time_budget:.0f} s)" if getattr(arguments, "time_budget", None) else ""


def report_rows(rows: list[dict], arguments: argparse.Namespace) -> None:
    """The table, the ratios and (``--json``) every measurement."""
    print_table(rows)
    print_ratios(rows)
    write_json(rows, arguments)


def write_json(rows: list[dict], arguments: argparse.Namespace) -> None:
    """``--json``: the rows so far (written again as each tool ends, so a cut-off run keeps what finished)."""
    if arguments.json:
        Path(arguments.json).parent.mkdir(parents=True, exist_ok=True)
        Path(arguments.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")


def json_writer(arguments: argparse.Namespace):
    """A ``run_tools`` ``finished`` callback: adds each tool's row to the list that ``--json`` holds so far."""
    done: list[dict] = []

    def finished(row: dict) -> None:
        done.append(row)
        write_json(done, arguments)

    return finished


def flair_python_for(arguments: argparse.Namespace) -> Path:
    """The flair venv's python: with ``--no-install`` (a machine without network, scripts/gpu_bench.sh)
    ``--flair-venv`` as it is, or its import error; else made first if needed (``ensure_flair_venv``)."""
    if not arguments.no_install:
        return ensure_flair_venv(Path(arguments.flair_venv))
    flair_python = Path(arguments.flair_venv) / "bin" / "python"
    problem = flair_venv_problem(flair_python) if flair_python.exists() else f"{flair_python} does not exist"
    if problem:
        raise SystemExit(f"the flair venv cannot run flair {FLAIR_VERSION}: {problem}")
    return flair_python


def main(argv: list[str] | None = None) -> list[dict]:
    arguments = parse_arguments(argv)
    flair_python = flair_python_for(arguments)
    finished, rows = json_writer(arguments), []
    deadline = time.perf_counter() + arguments.time_budget if arguments.time_budget else None
    with tempfile.TemporaryDirectory(prefix="compare-flair-") as temporary:
        work = Path(arguments.work_dir or temporary)
        for number, dataset in enumerate(arguments.datasets):
            share = share_left(deadline, len(arguments.datasets) - number) if deadline else None  # what is left, shared by the datasets left
            rows += compare_dataset(arguments, dataset, flair_python, work / dataset, finished, share)
    print(
        f"\nseqtransfer vs flair {FLAIR_VERSION}: torch {rows[0].get('torch', '?')}, {rows[0].get('device', '?')} / {rows[1].get('device', '?')}, {arguments.threads} threads, CRF, "
        f"training batch {arguments.train_batch_size or rows[0].get('train_batch_size', '?')}, {arguments.epochs} epochs{budget_description(arguments)}, "
        f"seed {arguments.seed}{subset_description(arguments)}"
    )
    report_rows(rows, arguments)
    return rows


if __name__ == "__main__":
    main()
