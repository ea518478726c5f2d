"""Does a multi-task epoch cost more than its tasks' mono-task epochs? (issue: MuTSPad, point 9)

    SEQTRANSFER_DATA=../shared/datasets python benchmarks/multitask_epoch.py --config experiments/configs/tweetall_multitask.yaml --epochs 2

Times training epochs (dev scoring excluded) of the multi-task model of ``--config`` (one task
per batch over every task's training set) and of one mono-task model per task on the same
training set, with the same sizes, optimizer and batch size, in this one process one after the
other; prints each median and the ratio multi-task / sum of mono-task epochs (the target: <= 1).
Run nothing else meanwhile (two cores: a contended epoch is several times slower).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

from seqtransfer.config import apply_overrides, load_config
from seqtransfer.models.registry import build_model
from seqtransfer.tasks import TASK_KINDS
from seqtransfer.training.loop import ShuffledBatches, train_epoch
from seqtransfer.training.optimizers import fill_optimizer, make_optimizer
from seqtransfer.training.seeding import seed_everything
from seqtransfer.training.vocabularies import prepare_vocabularies
from seqtransfer.workflows.multitask import TaskSchedule, encode_streams, load_multitask_data, prepare_multitask_vocabularies


def quiet(message: str) -> None:
    pass


def time_epochs(model, source, config, epochs: int) -> list[float]:
    optimizer = make_optimizer([{"params": [parameter for parameter in model.parameters() if parameter.requires_grad]}], config.train)
    seconds = []
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        train_epoch(model, optimizer, source, config.train, epoch, show_progress=False)
        seconds.append(time.perf_counter() - started)
    return seconds


def multitask_epochs(config, epochs: int) -> tuple[float, dict]:
    seed_everything(config.train.seed, config.train.threads)
    tasks = load_multitask_data(config)
    config.model.architecture = "multitask"
    config.model.task_kinds = {task: data.kind.name for task, data in tasks.items()}
    fill_optimizer(config.train, "adam" if "dependency" in config.model.task_kinds.values() else "sgd")  # as train_multitask
    for data in tasks.values():
        data.kind.fill_config(config.model, data.gold("train"))
    vocabularies, matrix = prepare_multitask_vocabularies(config, tasks, quiet)
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    schedule = TaskSchedule(encode_streams(tasks, vocabularies, False), config.train.batch_size, config.train.seed, config.multitask.sampling)
    return statistics.median(time_epochs(model, schedule, config, epochs)), tasks, config


def mono_task_epoch(config, data, epochs: int) -> float:
    """A mono-task model of the task's kind (tagger or parser), same sizes and optimizer."""
    seed_everything(config.train.seed, config.train.threads)
    config.model.tasks = config.model.task_kinds = None
    config.model.architecture = TASK_KINDS[data.kind.name].architectures["tagger"]
    vocabularies, matrix = prepare_vocabularies(config, data, quiet)
    model = build_model(config.model, vocabularies)
    model.word_representation.load_vectors(matrix)
    return statistics.median(time_epochs(model, ShuffledBatches(data.encode("train", vocabularies), config.train.batch_size, config.train.seed), config, epochs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="a multi-task run configuration (model.tasks, multitask.data)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs timed per model (median reported)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="also write the result as JSON here")
    parser.add_argument("overrides", nargs="*", help="dotted overrides, e.g. data.max_train_sentences=500")
    arguments = parser.parse_args()
    config = apply_overrides(load_config(arguments.config), [f"train.threads={arguments.threads}", *arguments.overrides])
    multi, tasks, filled = multitask_epochs(copy.deepcopy(config), arguments.epochs)
    config.train.optimizer, config.train.learning_rate = filled.train.optimizer, filled.train.learning_rate  # the same optimizer for every model
    config.model.single_root = filled.model.single_root
    mono = {}
    for task, data in tasks.items():
        mono[task] = mono_task_epoch(copy.deepcopy(config), data, arguments.epochs)
        print(f"mono-task {task:8s} ({data.dataset}/{data.task}, {len(data.splits['train'])} sentences): {mono[task]:7.1f} s / epoch")
    total = sum(mono.values())
    print(f"multi-task ({', '.join(tasks)}): {multi:7.1f} s / epoch; sum of mono-task epochs {total:7.1f} s; ratio {multi / total:.2f}")
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "config": arguments.config,
                    "epochs": arguments.epochs,
                    "threads": arguments.threads,
                    "overrides": arguments.overrides,
                    "multitask_epoch_seconds": round(multi, 2),
                    "mono_task_epoch_seconds": {task: round(value, 2) for task, value in mono.items()},
                    "ratio": round(multi / total, 3),
                },
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()
