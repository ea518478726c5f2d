"""seqtransfer vs SuPar 1.1.4: the same deep biaffine parser on the same data, in one invocation.

    nice -n 10 python benchmarks/compare_supar.py --datasets tweebank_single_root ud_ewt --epochs 2

Installs SuPar 1.1.4 (on top of torch 2.13.0 CPU) into its own venv, ``benchmarks/.supar-venv``,
the first time. For each dataset, writes the train/dev/test sentences once (CoNLL-U, read by
both tools), then runs each tool in a process of its own (``parser_runner.py`` with this
interpreter, ``supar_runner.py`` with SuPar's), both on the same torch threads, with the same
architecture: words (50, no pretrained vectors) + character BiLSTM (50 -> 100), a 3-layer
BiLSTM of 400 units per direction, arc MLPs 400, relation MLPs 100, dropout 0.5, Adam 0.003
(0.9, 0.95), no learning-rate decay, batches of 16 sentences (SuPar counts tokens per batch:
16 x the mean training sentence length), the same number of epochs. Prints per tool the median
training epoch seconds and training tokens/s (training passes only), test parsing tokens/s
(tree decoding; the best of two passes at each tool's best batch size: 32/64/128/512 sentences,
1000/2000/5000 tokens), peak resident memory, and test UAS/LAS of both tools' predictions scored by
``seqtransfer.data.attachment`` (equal to conll18_ud_eval.py), then the ratios. Each tool's
figures are printed (one JSON line) and written to ``--output`` the moment the tool ends.

On a machine without network (scripts/gpu_bench.sh): ``--no-install`` takes ``--venv`` as it is
(its python must import SuPar 1.1.4 on this interpreter's torch), ``--device cuda`` trains and
parses with both tools on the GPU, and ``--time-budget`` sizes the epochs (``compare``).
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

from budget import PROGRESS, partial_result, run_runner, runner_budget, share_left, training_speed

from seqtransfer.data.attachment import attachment_scores
from seqtransfer.data.conllu import read_conllu, write_conllu
from seqtransfer.data.registry import load_split
from seqtransfer.data.trees import read_tree

BENCHMARKS = Path(__file__).resolve().parent
SUPAR_VERSION = "1.1.4"
TORCH_VERSION = "2.13.0"
DEFAULT_DATA = BENCHMARKS.parent.parent / "shared" / "datasets"
SUPAR_CONFIG = """[Data]
encoder = 'lstm'
min_freq = 1
fix_len = 20
[Network]
n_embed = {word_dimension}
n_pretrained = {word_dimension}
n_char_embed = 50
n_char_hidden = 100
n_feat_embed = 100
char_dropout = 0
embed_dropout = .5
n_lstm_hidden = 400
n_lstm_layers = 3
encoder_dropout = .5
n_arc_mlp = 400
n_rel_mlp = 100
mlp_dropout = .5
scale = 0
[Optimizer]
lr = 3e-3
mu = .9
nu = .95
eps = 1e-12
weight_decay = 0
clip = 5.0
decay = 1.0
decay_steps = 5000
update_steps = 1
[Run]
batch_size = {batch_tokens}
epochs = {epochs}
patience = 100
"""


def supar_venv_ready(python: Path) -> bool:
    if not python.exists():
        return False
    check = f"import supar, torch; from importlib.metadata import version; assert version('supar') == '{SUPAR_VERSION}'; assert torch.__version__.startswith('{TORCH_VERSION}')"
    return subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0


def supar_python_for(arguments: argparse.Namespace) -> Path:
    """SuPar's python: with ``--no-install`` ``--venv`` as it is (or its import error), else made first if needed."""
    if not arguments.no_install:
        return ensure_supar_venv(Path(arguments.venv))
    import torch

    python = Path(arguments.venv) / "bin" / "python"
    check = f"import supar, torch; assert supar.__version__ == '{SUPAR_VERSION}', supar.__version__; assert torch.__version__ == '{torch.__version__}', torch.__version__"
    completed = subprocess.run([str(python), "-c", check], capture_output=True, text=True) if python.exists() else None
    if completed is None or completed.returncode:
        problem = (completed.stderr.strip().splitlines() or ["no output"])[-1] if completed else f"{python} does not exist"
        raise SystemExit(f"the SuPar venv cannot run SuPar {SUPAR_VERSION}: {problem}")
    return python


def ensure_supar_venv(venv: Path) -> Path:
    """SuPar's venv python; torch 2.13.0 goes in first and stays pinned (SuPar asks only torch>=1.7.1)."""
    python = venv / "bin" / "python"
    if supar_venv_ready(python):
        return python
    print(f"installing SuPar {SUPAR_VERSION} into {venv} (a few minutes) ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"torch=={TORCH_VERSION}"], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as constraints:
        constraints.write(f"torch=={TORCH_VERSION}\n")
    subprocess.run([*pip, "-c", constraints.name, f"supar=={SUPAR_VERSION}"], check=True)
    return python


def write_splits(dataset: str, folder: Path, data_dir: str | None, max_train_sentences: int | None, max_evaluation_sentences: int | None = None) -> dict[str, str]:
    """The dataset's splits as CoNLL-U files both tools read (train cut to ``max_train_sentences``, dev and test to ``max_evaluation_sentences``)."""
    paths = {}
    for split in ("train", "dev", "test"):
        sentences = load_split(dataset, split, data_dir)
        cut = max_train_sentences if split == "train" else max_evaluation_sentences
        if cut:
            sentences = sentences[:cut]
        paths[split] = str(folder / f"{split}.conllu")
        write_conllu(paths[split], sentences)
    return paths


def run_tool(python: Path, runner: str, settings: dict, folder: Path, name: str, timeout: float | None = None) -> dict:
    """Run one tool's runner: its output goes to ``FOLDER/NAME.log``, its own lines (the time budget's
    choices, its progress) are shown as they come. Killed at ``timeout`` seconds, its result is what its
    progress lines measured (``budget.partial_result``: ``killed`` true, no parsing, no scores)."""
    settings_path, result_path = folder / f"{name}-settings.json", folder / f"{name}-result.json"
    settings_path.write_text(json.dumps(settings))
    environment = {**os.environ, "PYTHONWARNINGS": "ignore", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    started = time.perf_counter()
    command = [str(python), str(BENCHMARKS / runner), str(settings_path), str(result_path)]
    output, killed = run_runner(command, environment, timeout, log=folder / f"{name}.log", echo=("seqtransfer:", "supar:", PROGRESS))
    if killed:
        print(f"{name} killed: its {timeout:.0f} s of the time budget ran out", file=sys.stderr, flush=True)
        result = partial_result(output)
    else:
        result = json.loads(result_path.read_text())
    result["process_seconds"] = time.perf_counter() - started
    return result


def summarize(result: dict, train_tokens: int, test_tokens: int, gold_trees: list) -> dict:
    """One tool's figures: training speed over its whole epochs (else the epoch the budget cut), parsing speed, scores."""
    median, speed = training_speed({"epoch_seconds": result.get("train_seconds", result.get("epoch_seconds")), "train_tokens": train_tokens, **result})
    row = {
        "median_train_epoch_seconds": round(median, 2) if median else None,
        "train_tokens_per_second": round(speed, 1) if speed else None,
        "epochs": len(result.get("train_seconds", result.get("epoch_seconds", []))),
        "train_seconds": result.get("train_seconds", result.get("epoch_seconds")),
        "process_seconds": round(result["process_seconds"], 1),
        **{
            key: result[key]
            for key in ("device", "torch", "time_budget", "probe_sentences", "estimated_epoch_seconds", "epoch_tokens", "epoch_cut", "killed", "train_path", "train_sentences", "train_tokens")
            if key in result
        },
    }
    if result.get("killed"):
        return {**row, "parse_tokens_per_second": None, "peak_rss_mb": None, "test_uas": None, "test_las": None}
    predicted = [read_tree(sentence) for sentence in read_conllu(result["predictions"])]
    scores = attachment_scores(gold_trees, predicted)
    return {
        **row,
        "parse_tokens_per_second": round(test_tokens / result["parse_seconds"], 1),
        "peak_rss_mb": round(result["peak_rss_mb"], 1),
        "test_uas": round(scores["uas"], 2),
        "test_las": round(scores["las"], 2),
        "parse_seconds": round(result["parse_seconds"], 3),
        "parse_seconds_by_batch": result["parse_seconds_by_batch"],
    }


def compare(dataset: str, arguments: argparse.Namespace, supar_python: Path, finished=None, time_budget: float | None = None) -> dict:
    """Both tools on one dataset; ``finished`` is given the dataset's result so far each time a tool ends.

    ``time_budget`` (seconds for both): seqtransfer gets half and chooses how many of ``--epochs`` fit
    (``parser_runner.epochs_that_fit``: one timed epoch on a tenth of the training set), or, where not one
    does, the first sentences that fit one epoch; SuPar then trains as many epochs on the same file in
    what is left (stopping early, or within its first epoch, where they would not fit: ``budget.Budget``).
    Each tool's share is also a hard limit: a runner still running at its end is killed, and its row
    holds the training speed of its progress lines."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"compare-supar-{dataset}-") as temporary:
        folder = Path(temporary)
        paths = write_splits(dataset, folder, arguments.data_dir, arguments.max_train_sentences, arguments.max_evaluation_sentences)
        train = read_conllu(paths["train"])
        test = read_conllu(paths["test"])
        train_tokens, test_tokens = sum(map(len, train)), sum(map(len, test))
        batch_tokens = round(arguments.batch_size * train_tokens / len(train))
        settings = {
            **paths,
            "epochs": arguments.epochs,
            "threads": arguments.threads,
            "seed": arguments.seed,
            "word_dimension": 50,
            "batch_tokens": batch_tokens,
            "config": str(folder / "supar.ini"),
            "device": arguments.device,
            "parse_batch_sentences": [32, 64, 128, 512],
            "parse_batch_tokens": [1000, 2000, 5000],
        }
        result = {
            "dataset": dataset,
            "train_sentences": len(train),
            "train_tokens": train_tokens,
            "test_tokens": test_tokens,
            "batch_sentences": arguments.batch_size,
            "supar_batch_tokens": batch_tokens,
            "threads": arguments.threads,
            "device": arguments.device,
        }
        gold = [read_tree(sentence) for sentence in test]
        share = (time_budget - (time.perf_counter() - started)) / 2 if time_budget else None
        budget = {"time_budget": runner_budget(share)} if share else {}
        print(f"{dataset}: running seqtransfer ...", file=sys.stderr, flush=True)
        ours = run_tool(Path(sys.executable), "parser_runner.py", {**settings, **budget, "started_at": time.time(), "model": str(folder / "seqtransfer-run")}, folder, "seqtransfer", share)
        result["seqtransfer"] = summarize(ours, train_tokens, test_tokens, gold)
        print(f"{dataset}: seqtransfer finished: {json.dumps(result['seqtransfer'])}", file=sys.stderr, flush=True)
        if finished:
            finished(result)
        epochs = ours.get("epochs") or arguments.epochs  # the time budget's choice, else --epochs
        (folder / "supar.ini").write_text(SUPAR_CONFIG.format(word_dimension=50, batch_tokens=batch_tokens, epochs=epochs))
        share = max(time_budget - (time.perf_counter() - started), 1.0) if time_budget else None
        budget = {"time_budget": runner_budget(share)} if share else {}
        same = {"train": ours.get("train_path", paths["train"])}  # the sentences seqtransfer trained on
        print(f"{dataset}: running supar ...", file=sys.stderr, flush=True)
        supar = run_tool(
            supar_python,
            "supar_runner.py",
            {**settings, **budget, **same, "started_at": time.time(), "epochs": epochs, "model": str(folder / "supar.model"), "predictions": str(folder / "supar-test.conllu")},
            folder,
            "supar",
            share,
        )
        result["supar"] = summarize(supar, train_tokens, test_tokens, gold)
        print(f"{dataset}: supar finished: {json.dumps(result['supar'])}", file=sys.stderr, flush=True)
    tools = {name: result[name] for name in ("seqtransfer", "supar")}
    if tools["seqtransfer"]["epochs"] != tools["supar"]["epochs"]:
        print(
            f"{dataset}: WARNING: the time budget stopped the tools after different epochs ({tools['seqtransfer']['epochs']} and {tools['supar']['epochs']}): their UAS/LAS are not comparable",
            file=sys.stderr,
            flush=True,
        )
    ratios = {key: ratio(tools, key) for key in ("train_tokens_per_second", "parse_tokens_per_second")}
    ratios["peak_rss"] = ratio(tools, "peak_rss_mb")
    result["ratios"] = ratios
    if finished:
        finished(result)
    return result


def ratio(tools: dict, key: str) -> float | None:
    """seqtransfer / SuPar of one figure, None where either was not measured (a killed runner)."""
    ours, theirs = tools["seqtransfer"].get(key), tools["supar"].get(key)
    return round(ours / theirs, 2) if ours and theirs else None


def print_comparison(result: dict) -> None:
    print(f"\n{result['dataset']}: {result['train_sentences']} training sentences ({result['train_tokens']} tokens), {result['test_tokens']} test tokens, {result['threads']} threads")
    if result["seqtransfer"].get("train_sentences", result["train_sentences"]) != result["train_sentences"]:
        print(f"  the time budget cut the training set: both tools trained on its first {result['seqtransfer']['train_sentences']} sentences ({result['seqtransfer']['train_tokens']} tokens)")
    print(f"{'':24}{'seqtransfer':>14}{'SuPar 1.1.4':>14}{'ratio':>8}")
    rows = [
        ("epochs", "epochs", None),
        ("train epoch (s)", "median_train_epoch_seconds", None),
        ("train tokens/s", "train_tokens_per_second", "train_tokens_per_second"),
        ("parse tokens/s", "parse_tokens_per_second", "parse_tokens_per_second"),
        ("peak RSS (MB)", "peak_rss_mb", "peak_rss"),
        ("test UAS", "test_uas", None),
        ("test LAS", "test_las", None),
    ]
    shown = {name: {key: "-" if value is None else str(value) for key, value in result[name].items()} for name in ("seqtransfer", "supar")}  # "-": not measured
    for title, key, ratio_key in rows:
        ratio_text = ("-" if result["ratios"][ratio_key] is None else f"{result['ratios'][ratio_key]:.2f}x") if ratio_key else ""
        print(f"{title:24}{shown['seqtransfer'].get(key, '-'):>14}{shown['supar'].get(key, '-'):>14}{ratio_text:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["tweebank_single_root"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per training batch (SuPar: as tokens)")
    parser.add_argument("--max-train-sentences", type=int, help="cut the training set (e.g. UD-EWT for a quick run)")
    parser.add_argument("--max-evaluation-sentences", type=int, help="cut the dev and test sets (quick checks)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=os.environ.get("SEQTRANSFER_DATA", str(DEFAULT_DATA)))
    parser.add_argument("--venv", default=str(BENCHMARKS / ".supar-venv"))
    parser.add_argument("--no-install", action="store_true", help="use --venv as it is, and stop with its error if it cannot run SuPar (no network)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]: both tools on that device")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="seconds for the whole invocation, shared equally by the datasets; in each, seqtransfer gets half and trains as many of --epochs "
        "as fit (estimated from one epoch on a tenth of the training set; at least one), then SuPar trains as many in what is left (compare)",
    )
    parser.add_argument("--output", help="JSON file for the results, written again as each tool ends (default benchmarks/results/supar-<datasets>-seed<seed>.json)")
    arguments = parser.parse_args()
    supar_python = supar_python_for(arguments)
    output = Path(arguments.output or BENCHMARKS / "results" / f"supar-{'-'.join(arguments.datasets)}-seed{arguments.seed}.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []

    def finished(result: dict) -> None:  # the datasets done, and this one as far as it got
        output.write_text(json.dumps([*results, result], indent=1))

    deadline = time.perf_counter() + arguments.time_budget if arguments.time_budget else None
    for number, dataset in enumerate(arguments.datasets):
        share = share_left(deadline, len(arguments.datasets) - number) if deadline else None  # what is left, shared by the datasets left
        results.append(compare(dataset, arguments, supar_python, finished, share))
        print_comparison(results[-1])
    output.write_text(json.dumps(results, indent=1))
    print(f"\nwritten: {output}")


if __name__ == "__main__":
    main()
