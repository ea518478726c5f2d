"""seqtransfer's biaffine parser, trained and timed for compare_supar.py (run with this repository's venv).

    python parser_runner.py SETTINGS.json RESULT.json

Trains for a fixed number of epochs (no early stop) through the one training loop, then parses
the test set with tree decoding, timed. Writes per-epoch training seconds (training batches
only), parse seconds, peak resident memory and the prediction file (CoNLL-U).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import torch

from seqtransfer.config import RunConfig, apply_overrides
from seqtransfer.training.inference import predict_labels
from seqtransfer.workflows.train import train_tagger


def main(settings_path: str, result_path: str) -> None:
    settings = json.loads(Path(settings_path).read_text())
    config = RunConfig()
    config.data.dataset, config.data.train, config.data.dev, config.data.test = None, settings["train"], settings["dev"], settings["test"]
    config.data.task = "dependency"
    apply_overrides(config, [
        "model.embeddings=null", f"model.word_dimension={settings['word_dimension']}", "model.dropout=0.5",
        f"train.max_epochs={settings['epochs']}", f"train.patience={settings['epochs'] + 1}", f"train.threads={settings['threads']}",
        f"train.seed={settings['seed']}", "train.optimizer=adam", "train.learning_rate=0.003",
    ])
    output = Path(settings["model"])
    metrics = train_tagger(config, output, log=lambda message: None, show_progress=False)
    from seqtransfer.rundir import load_run

    run = load_run(output)
    from seqtransfer.data.task_data import load_task_data

    data = load_task_data(run.config.data, splits=("test",))
    encoded = data.encode("test", run.vocabularies, with_targets=False)
    torch.set_num_threads(settings["threads"])
    parse_seconds = {}
    for batch_size in settings["parse_batch_sentences"]:  # the best of two passes at each batch size
        for _ in range(2):
            started = time.perf_counter()
            predicted = predict_labels(run.model, encoded, run.vocabularies.labels, batch_size)
            parse_seconds[batch_size] = min(parse_seconds.get(batch_size, float("inf")), time.perf_counter() - started)
    data.kind.write_predictions(output, "benchmark-test", data.splits["test"], None, predicted)
    result = {"train_seconds": [record["train_seconds"] for record in metrics["history"]],
              "evaluate_seconds": [record["epoch_seconds"] - record["train_seconds"] for record in metrics["history"]],
              "parse_seconds_by_batch": parse_seconds, "parse_seconds": min(parse_seconds.values()), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
              "predictions": str(output / "benchmark-test.conllu"), "torch": torch.__version__}
    Path(result_path).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:3])
