"""Does a tag set of ~1,000 MSD labels slow training? (MSD issue, point 2: at most 1.5x UPOS)

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/msd_epoch.py --dataset mtt_sl_news --epochs 2 --output benchmarks/results/msd-epoch-sl-news.json

Times training epochs (dev scoring excluded) of the same tagger on the same training sentences
with the UPOS labels (17) and with the MSD labels (about 1,000), with a softmax and with a CRF,
in this one process one after the other; prints each median and the ratio MSD / UPOS. The CRF's
cost grows with L^2 (its transitions) in the forward-backward and Viterbi recursions.
Run nothing else meanwhile (two cores: a contended epoch is several times slower).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from seqtransfer.config import DataConfig, RunConfig, apply_overrides
from seqtransfer.corpora.task_data import load_task_data
from seqtransfer.models.registry import build_model
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies


def epoch_seconds(dataset: str, task: str, classifier: str, epochs: int, threads: int, overrides: list[str]) -> tuple[float, int]:
    """(median seconds of a training epoch, number of labels)."""
    config = apply_overrides(RunConfig(), [f"data.dataset={dataset}", f"data.task={task}", f"model.classifier={classifier}", f"train.threads={threads}", *overrides])
    seed_everything(config.train.seed, threads)
    data = load_task_data(DataConfig(dataset=dataset, task=task, data_dir=config.data.data_dir, max_train_sentences=config.data.max_train_sentences), ("train", "dev"))
    fill_optimizer(config.train, data.kind.optimizer)
    vocabularies, matrix = prepare_vocabularies(config, data, lambda message: None)
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    optimizer = make_optimizer([{"params": list(model.parameters())}], config.train)
    batches = ShuffledBatches(data.encode("train", vocabularies), config.train.batch_size, config.train.seed)
    seconds = []
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        train_epoch(model, optimizer, batches, config.train, epoch, show_progress=False)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), len(vocabularies.labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="mtt_sl_news", help="a dataset with both an msd and a upos task (default mtt_sl_news)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs timed per model (median reported)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="also write the result as JSON here")
    parser.add_argument("overrides", nargs="*", help="dotted overrides, e.g. data.max_train_sentences=2000")
    arguments = parser.parse_args()
    result = {"dataset": arguments.dataset, "epochs": arguments.epochs, "threads": arguments.threads, "overrides": arguments.overrides}
    for classifier in ("softmax", "crf"):
        upos, upos_labels = epoch_seconds(arguments.dataset, "upos", classifier, arguments.epochs, arguments.threads, arguments.overrides)
        msd, msd_labels = epoch_seconds(arguments.dataset, "msd", classifier, arguments.epochs, arguments.threads, arguments.overrides)
        result[classifier] = {"upos_seconds": round(upos, 2), "upos_labels": upos_labels, "msd_seconds": round(msd, 2), "msd_labels": msd_labels, "ratio": round(msd / upos, 3)}
        print(f"{classifier}: UPOS ({upos_labels} labels) {upos:.1f} s/epoch, MSD ({msd_labels} labels) {msd:.1f} s/epoch: ratio {msd / upos:.2f} (goal <= 1.5)", flush=True)
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
            handle.write("\n")


if __name__ == "__main__":
    main()
