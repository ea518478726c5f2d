"""`seqtransfer train`: train a tagger and write its run directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import whole
from seqtransfer.config import RunConfig, apply_overrides, load_config
from seqtransfer.errors import SeqTransferError


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that name the data: a registered dataset, or your own column files."""
    parser.add_argument("--dataset", help="registered dataset name (see `seqtransfer datasets`)")
    parser.add_argument("--task", help="task of the dataset (default: its first task)")
    parser.add_argument("--data-dir", help="folder holding the dataset folders (default: $SEQTRANSFER_DATA)")
    parser.add_argument("--train", help="your own training file (CoNLL or CoNLL-U)")
    parser.add_argument("--dev", help="your own dev file")
    parser.add_argument("--test", help="your own test file")
    parser.add_argument("--columns", help="column names of your CoNLL files, e.g. word,pos")
    parser.add_argument("--scheme", help="tag scheme of your labels: auto (default: inferred from the labels), none, iob1, iob2, bioes")
    parser.add_argument("--separator", choices=["auto", "tab", "space"], help="field separator of your column files (default auto: TAB if token lines hold TABs)")
    parser.add_argument("--strict", action="store_true", help="tags out of their scheme's order are an error instead of a warning")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML run configuration (sections data, model, train)")
    add_data_arguments(parser)
    parser.add_argument("--classifier", choices=["softmax", "crf"], help="output layer (default softmax)")
    parser.add_argument("--embeddings", help="glove-6b-50d, a GloVe/word2vec/fastText text file, or 'none'")
    parser.add_argument("--encoder", help="a pretrained Transformer encoder: a Hugging Face folder, minilm or mpnet (same as model.encoder)")
    parser.add_argument("--encoder-mode", choices=["features", "finetune"], help="freeze the encoder (features, the default) or fine-tune it (same as model.encoder_mode)")
    parser.add_argument("--seed", type=whole(0), help="random seed (default 1)")
    parser.add_argument("--device", help="auto (default: first GPU, else CPU), cpu, cuda, cuda:N or mps; same as train.device")
    parser.add_argument("--epochs", type=whole(1), help="maximum number of epochs (default 100; same as train.max_epochs)")
    parser.add_argument("--output", required=True, help="run directory to write (resumes an interrupted run)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--restart", action="store_true", help="delete the unfinished (or finished) run in --output and start it over")
    parser.add_argument("overrides", nargs="*", help="dotted overrides, e.g. train.learning_rate=0.01 model.hidden=400")


def transfer_arguments(parser: argparse.ArgumentParser) -> None:
    from seqtransfer.transfer.schemes import SCHEMES

    parser.add_argument("--source", required=True, help="run directory of the source model (trained with `seqtransfer train`)")
    parser.add_argument("--method", dest="transfer_scheme", default="finetune", choices=list(SCHEMES), help="transfer scheme (default finetune)")
    arguments(parser)


def config_from_arguments(arguments: argparse.Namespace) -> RunConfig:
    """Config file, then the named options, then dotted overrides (later wins)."""
    config = load_config(arguments.config) if arguments.config else RunConfig()
    named = {
        "data.dataset": arguments.dataset,
        "data.task": arguments.task,
        "data.data_dir": arguments.data_dir,
        "data.train": arguments.train,
        "data.dev": arguments.dev,
        "data.test": arguments.test,
        "data.columns": arguments.columns,
        "data.scheme": arguments.scheme,
        "data.separator": arguments.separator,
        "data.strict": True if arguments.strict else None,
        "model.classifier": arguments.classifier,
        "model.embeddings": arguments.embeddings,
        "model.encoder": arguments.encoder,
        "model.encoder_mode": arguments.encoder_mode,
        "train.seed": arguments.seed,
        "train.max_epochs": arguments.epochs,
        "train.device": arguments.device,
        "transfer.source": getattr(arguments, "source", None),
        "transfer.scheme": getattr(arguments, "transfer_scheme", None),
    }
    for key, value in named.items():
        if value is not None:
            section, name = key.split(".")
            setattr(getattr(config, section), name, value)
    check_named_against_overrides(named, arguments.overrides)
    if arguments.train and arguments.dataset:
        raise SeqTransferError(
            f"--dataset {arguments.dataset} and --train {arguments.train} both name the training data",
            hint="drop --dataset to train on your files, or --train/--dev/--test to use the registered dataset",
        )
    if arguments.train:
        config.data.dataset = None
    if config.model.embeddings in ("none", "None", ""):
        config.model.embeddings = None
    if isinstance(config.data.columns, str):
        config.data.columns = [part.strip() for part in config.data.columns.split(",") if part.strip()]
    return apply_overrides(config, arguments.overrides)


def check_named_against_overrides(named: dict, overrides: list[str]) -> None:
    """An option and a dotted override of the same setting must agree (``--epochs 5 train.max_epochs=9``)."""
    from seqtransfer.files import load_yaml

    for override in overrides:
        key, _, raw_value = override.partition("=")
        if named.get(key) is not None and load_yaml(raw_value) != named[key]:
            raise SeqTransferError(f"the option for {key} says {named[key]!r} but the override says {raw_value!r}", hint="give the setting once")


def restart(output: Path) -> None:
    """Empty a run directory (only one that seqtransfer wrote), under its lock, so that training starts over."""
    import shutil

    from seqtransfer import rundir

    if not output.exists():
        return
    from seqtransfer.workflows.jackknife import JACKKNIFE

    if not ((output / "config.yaml").is_file() or (output / "checkpoint").is_dir() or (output / JACKKNIFE).is_dir()):  # a run, or one stopped while its fold taggers trained
        raise SeqTransferError("--restart deletes run directories only, and this folder is not one", path=output, hint="choose another --output")
    with rundir.writer_lock(output):  # refused while another process trains into it
        for entry in output.iterdir():
            if entry.name != rundir.LOCK:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


class RunLog:
    """Prints messages and appends them to the run's log file once its folder exists.

    Nothing is written before the data has been read and checked, so a run that fails on bad
    input leaves no folder behind.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pending: list[str] = []

    def __call__(self, message: str) -> None:
        print(message, flush=True)
        self.pending.append(message)
        if self.path.parent.is_dir():
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write("\n".join(self.pending) + "\n")
            self.pending.clear()


def run(arguments: argparse.Namespace) -> dict:
    from seqtransfer.training.report import format_scores
    from seqtransfer.workflows.train import train_tagger

    config = config_from_arguments(arguments)
    output = Path(arguments.output)
    if output.exists() and not output.is_dir():
        raise SeqTransferError("--output exists and is not a folder", path=output, hint="choose a folder path")
    if arguments.restart:
        restart(output)
    log = RunLog(output / "log.txt")
    metrics = train_tagger(config, output, log=log, show_progress=not arguments.quiet)
    log(format_scores(metrics))
    log(f"run directory: {output}")
    return metrics


COMMAND = Command("train a tagger (from scratch unless transfer.scheme says otherwise) and save it as a run directory", arguments, run)
TRANSFER_COMMAND = Command("transfer a source run to target data with a scheme (finetune, features, pretrand)", transfer_arguments, run)
