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
``seqtransfer.data.attachment`` (equal to conll18_ud_eval.py), then the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def write_splits(dataset: str, folder: Path, data_dir: str | None, max_train_sentences: int | None) -> dict[str, str]:
    """The dataset's splits as CoNLL-U files both tools read (train cut to ``max_train_sentences``)."""
    paths = {}
    for split in ("train", "dev", "test"):
        sentences = load_split(dataset, split, data_dir)
        if split == "train" and max_train_sentences:
            sentences = sentences[:max_train_sentences]
        paths[split] = str(folder / f"{split}.conllu")
        write_conllu(paths[split], sentences)
    return paths


def run_tool(python: Path, runner: str, settings: dict, folder: Path, name: str) -> dict:
    settings_path, result_path = folder / f"{name}-settings.json", folder / f"{name}-result.json"
    settings_path.write_text(json.dumps(settings))
    environment = {**os.environ, "PYTHONWARNINGS": "ignore", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    started = time.perf_counter()
    with open(folder / f"{name}.log", "w") as log:  # progress bars and logs; shown if the tool fails
        finished = subprocess.run([str(python), str(BENCHMARKS / runner), str(settings_path), str(result_path)], env=environment, stdout=log, stderr=log)
    if finished.returncode:
        tail = (folder / f"{name}.log").read_text(errors="replace")[-3000:]
        raise SystemExit(f"{name} failed (exit {finished.returncode}):\n{tail}")
    result = json.loads(result_path.read_text())
    result["process_seconds"] = time.perf_counter() - started
    return result


def summarize(result: dict, train_tokens: int, test_tokens: int, gold_trees: list) -> dict:
    predicted = [read_tree(sentence) for sentence in read_conllu(result["predictions"])]
    scores = attachment_scores(gold_trees, predicted)
    epoch = statistics.median(result["train_seconds"])
    return {"median_train_epoch_seconds": round(epoch, 2), "train_tokens_per_second": round(train_tokens / epoch, 1),
            "parse_tokens_per_second": round(test_tokens / result["parse_seconds"], 1), "peak_rss_mb": round(result["peak_rss_mb"], 1),
            "test_uas": round(scores["uas"], 2), "test_las": round(scores["las"], 2), "epochs": len(result["train_seconds"]),
            "train_seconds": result["train_seconds"], "parse_seconds": round(result["parse_seconds"], 3),
            "parse_seconds_by_batch": result["parse_seconds_by_batch"]}


def compare(dataset: str, arguments: argparse.Namespace, supar_python: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"compare-supar-{dataset}-") as temporary:
        folder = Path(temporary)
        paths = write_splits(dataset, folder, arguments.data_dir, arguments.max_train_sentences)
        train = read_conllu(paths["train"])
        test = read_conllu(paths["test"])
        train_tokens, test_tokens = sum(map(len, train)), sum(map(len, test))
        batch_tokens = round(arguments.batch_size * train_tokens / len(train))
        (folder / "supar.ini").write_text(SUPAR_CONFIG.format(word_dimension=50, batch_tokens=batch_tokens, epochs=arguments.epochs))
        settings = {**paths, "epochs": arguments.epochs, "threads": arguments.threads, "seed": arguments.seed, "word_dimension": 50,
                    "batch_tokens": batch_tokens, "config": str(folder / "supar.ini"),
                    "parse_batch_sentences": [32, 64, 128, 512], "parse_batch_tokens": [1000, 2000, 5000]}
        gold = [read_tree(sentence) for sentence in test]
        ours = run_tool(Path(sys.executable), "parser_runner.py", {**settings, "model": str(folder / "seqtransfer-run")}, folder, "seqtransfer")
        supar = run_tool(supar_python, "supar_runner.py", {**settings, "model": str(folder / "supar.model"), "predictions": str(folder / "supar-test.conllu")}, folder, "supar")
        tools = {"seqtransfer": summarize(ours, train_tokens, test_tokens, gold), "supar": summarize(supar, train_tokens, test_tokens, gold)}
    ratios = {key: round(tools["seqtransfer"][key] / tools["supar"][key], 2) for key in ("train_tokens_per_second", "parse_tokens_per_second")}
    ratios["peak_rss"] = round(tools["seqtransfer"]["peak_rss_mb"] / tools["supar"]["peak_rss_mb"], 2)
    return {"dataset": dataset, "train_sentences": len(train), "train_tokens": train_tokens, "test_tokens": test_tokens,
            "batch_sentences": arguments.batch_size, "supar_batch_tokens": batch_tokens, "threads": arguments.threads, **tools, "ratios": ratios}


def print_comparison(result: dict) -> None:
    print(f"\n{result['dataset']}: {result['train_sentences']} training sentences ({result['train_tokens']} tokens), "
          f"{result['test_tokens']} test tokens, {result['threads']} threads")
    print(f"{'':24}{'seqtransfer':>14}{'SuPar 1.1.4':>14}{'ratio':>8}")
    rows = [("train epoch (s)", "median_train_epoch_seconds", None), ("train tokens/s", "train_tokens_per_second", "train_tokens_per_second"),
            ("parse tokens/s", "parse_tokens_per_second", "parse_tokens_per_second"), ("peak RSS (MB)", "peak_rss_mb", "peak_rss"),
            ("test UAS", "test_uas", None), ("test LAS", "test_las", None)]
    for title, key, ratio in rows:
        ratio_text = f"{result['ratios'][ratio]:.2f}x" if ratio else ""
        print(f"{title:24}{result['seqtransfer'][key]:>14}{result['supar'][key]:>14}{ratio_text:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["tweebank_single_root"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per training batch (SuPar: as tokens)")
    parser.add_argument("--max-train-sentences", type=int, help="cut the training set (e.g. UD-EWT for a quick run)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=os.environ.get("SEQTRANSFER_DATA", str(DEFAULT_DATA)))
    parser.add_argument("--venv", default=str(BENCHMARKS / ".supar-venv"))
    parser.add_argument("--output", help="JSON file for the results (default benchmarks/results/supar-<datasets>-seed<seed>.json)")
    arguments = parser.parse_args()
    supar_python = ensure_supar_venv(Path(arguments.venv))
    results = []
    for dataset in arguments.datasets:
        results.append(compare(dataset, arguments, supar_python))
        print_comparison(results[-1])
    output = Path(arguments.output or BENCHMARKS / "results" / f"supar-{'-'.join(arguments.datasets)}-seed{arguments.seed}.json")
    output.write_text(json.dumps(results, indent=1))
    print(f"\nwritten: {output}")


if __name__ == "__main__":
    main()
