"""seqtransfer's biaffine parser, trained and timed for compare_supar.py (run with this repository's venv).

    python parser_runner.py SETTINGS.json RESULT.json

Trains for a fixed number of epochs (no early stop) through the one training loop, then parses
the test set with tree decoding, timed. Writes per-epoch training seconds (training batches
only), parse seconds, peak resident memory and the prediction file (CoNLL-U).

With ``time_budget`` in the settings (seconds for this process), the number of epochs is chosen
first (``epochs_that_fit``): one epoch on a prefix of the training set, timed, gives the cost of
a full epoch, and the run trains as many of ``epochs`` as fit with the parsing after; where not even
one fits, one epoch on the first sentences that fit (``train_path`` in the result: the comparison
trains SuPar on the same file).
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from pathlib import Path

import torch
from budget import deadline_of, progress_line, sizes_that_fit

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.data.conllu import read_conllu, write_conllu
from seqtransfer.training.inference import predict_labels
from seqtransfer.workflows.train import train_tagger


def parser_config(settings: dict, train: str, epochs: int) -> RunConfig:
    config = RunConfig()
    config.data.dataset, config.data.train, config.data.dev, config.data.test = None, train, settings["dev"], settings["test"]
    config.data.task = "dependency"
    apply_overrides(
        config,
        [
            "model.embeddings=null",
            f"model.word_dimension={settings['word_dimension']}",
            "model.dropout=0.5",
            f"train.max_epochs={epochs}",
            f"train.patience={epochs + 1}",
            f"train.threads={settings['threads']}",
            f"train.seed={settings['seed']}",
            "train.optimizer=adam",
            "train.learning_rate=0.003",
            f"train.device={settings.get('device', 'auto')}",
        ],
    )
    return config


def epochs_that_fit(settings: dict, output: Path, started: float) -> tuple[int, str, dict]:
    """How many of ``settings["epochs"]`` fit in ``settings["time_budget"]`` seconds from ``started``, the
    training file to train them on (the whole one, or the first sentences that fit one epoch), and the probe's figures.

    One epoch on the first tenth of the training sentences (at least 100) is timed (its progress line
    gives a killed runner its training speed); a full epoch is estimated as its training seconds scaled
    by tokens, plus its dev scoring. A run's fixed cost (what the probe's run took beyond its epoch:
    set-up, scoring test, writing the run), and the timed parsing (two passes at each batch size, as
    ten dev scorings) are kept aside."""
    sentences = read_conllu(settings["train"])
    prefix = sentences[: max(100, len(sentences) // 10)]
    probe_train = output.parent / f"{output.name}-probe-train.conllu"
    write_conllu(probe_train, prefix)
    probe_started = time.perf_counter()
    metrics = train_tagger(parser_config(settings, str(probe_train), 1), output.parent / f"{output.name}-probe", log=lambda message: None, show_progress=False)
    record = metrics["history"][0]
    fixed = time.perf_counter() - probe_started - record["epoch_seconds"]
    progress_line("seqtransfer", epoch=0, sentences=len(prefix), tokens=sum(map(len, prefix)), seconds=record["train_seconds"], cut=True, finished=True, probe=True)
    scoring = record["epoch_seconds"] - record["train_seconds"]
    epoch = record["train_seconds"] * sum(map(len, sentences)) / sum(map(len, prefix)) + scoring
    left = settings["time_budget"] - (time.perf_counter() - started) - fixed - 10 * scoring
    epochs = max(1, min(settings["epochs"], math.floor(left / epoch)))
    probe = {"probe_sentences": len(prefix), "probe_train_seconds": record["train_seconds"], "estimated_epoch_seconds": round(epoch, 2)}
    print(f"seqtransfer: time budget {settings['time_budget']:.0f} s: an epoch is estimated at {epoch:.1f} s: {epochs} of {settings['epochs']} epochs", file=sys.stderr, flush=True)
    if left >= epoch:
        return epochs, settings["train"], probe
    fraction = max(left - scoring, 0.0) / max(epoch - scoring, 1e-9)  # the dev scoring does not shrink with the file
    kept = sentences[: max(len(prefix), math.floor(len(sentences) * fraction))]
    cut_train = output.parent / f"{output.name}-train-cut.conllu"
    write_conllu(cut_train, kept)
    print(f"seqtransfer: time budget: one epoch does not fit: training on the first {len(kept)} of {len(sentences)} sentences", file=sys.stderr, flush=True)
    return 1, str(cut_train), probe


def main(settings_path: str, result_path: str) -> None:
    settings = json.loads(Path(settings_path).read_text())
    deadline = deadline_of(settings.get("time_budget"), settings.get("started_at"))  # from the comparison's start, as its kill
    started = deadline - settings["time_budget"] if deadline is not None else time.perf_counter()
    output = Path(settings["model"])
    budgeted = bool(settings.get("time_budget"))
    epochs, train_path, probe = epochs_that_fit(settings, output, started) if budgeted else (settings["epochs"], settings["train"], {})
    trained = read_conllu(train_path)
    tokens = sum(map(len, trained))

    def report(record: dict) -> None:  # a progress line per epoch (budget.py)
        progress_line("seqtransfer", epoch=record["epoch"], sentences=len(trained), tokens=tokens, seconds=record["train_seconds"], cut=False, finished=True)

    metrics = train_tagger(parser_config(settings, train_path, epochs), output, log=lambda message: None, show_progress=False, epoch_reports=(report,))
    from seqtransfer.rundir import load_run

    run = load_run(output, settings.get("device", "auto"))  # parsing on the device it trained on (load_run alone: the CPU)
    from seqtransfer.corpora.task_data import load_task_data

    data = load_task_data(run.config.data, splits=("test",))
    encoded = data.encode("test", run.vocabularies, with_targets=False)
    torch.set_num_threads(settings["threads"])
    parse_seconds = {}
    for batch_size in sizes_that_fit("seqtransfer", settings["parse_batch_sentences"], parse_seconds, deadline, passes=3):  # the best of two passes at each, then the predictions written
        for _ in range(2):
            parse_started = time.perf_counter()
            predicted = predict_labels(run.model, encoded, run.vocabularies.labels, batch_size)  # labels on the host: the GPU's work is done
            parse_seconds[batch_size] = min(parse_seconds.get(batch_size, float("inf")), time.perf_counter() - parse_started)
    data.kind.write_predictions(output, "benchmark-test", data.splits["test"], None, predicted)
    result = {
        "train_seconds": [record["train_seconds"] for record in metrics["history"]],
        "evaluate_seconds": [record["epoch_seconds"] - record["train_seconds"] for record in metrics["history"]],
        "parse_seconds_by_batch": parse_seconds,
        "parse_seconds": min(parse_seconds.values()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "predictions": str(output / "benchmark-test.conllu"),
        "torch": torch.__version__,
        "device": str(next(run.model.parameters()).device),
        "epochs": epochs,
        "train_path": train_path,
        "train_sentences": len(trained),
        "train_tokens": tokens,
        "epochs_asked": settings["epochs"],
        "time_budget": settings.get("time_budget"),
        **probe,
    }
    Path(result_path).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
