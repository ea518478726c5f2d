"""`seqtransfer selflabel METHOD`: self-, co- or tri-training on unlabelled target text (workflows/selflabel.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from seqtransfer.commands.base import Command
from seqtransfer.commands.numbers import positive, probability, whole
from seqtransfer.data.tokenize import TOKENIZERS

# workflows/selflabel.py's METHODS, named here so that `--help` does not import torch (a test holds them equal)
METHOD_NAMES = ("self_training", "tri_training", "tri_training_disagreement", "co_training")


def arguments(parser: argparse.ArgumentParser) -> None:
    from seqtransfer.commands.train import arguments as train_arguments

    parser.add_argument("method", choices=METHOD_NAMES, help="self_training, tri_training, tri_training_disagreement or co_training")
    parser.add_argument("--unlabeled", required=True, help="unlabelled target text: DATASET[:SPLIT] (labels ignored), tweets_unlabeled, a text file or a CoNLL file")
    parser.add_argument("--tokenizer", choices=list(TOKENIZERS), default="whitespace", help="how a raw-text file is split (default whitespace)")
    parser.add_argument("--word-column", type=whole(1), help="a CoNLL file's word column (1-based)")
    parser.add_argument("--rounds", type=whole(0), default=3, help="self-labelling rounds after the first model(s) (default 3)")
    parser.add_argument("--pool", type=whole(1), default=5000, help="unlabelled sentences drawn per round (default 5000)")
    parser.add_argument("--threshold", type=probability, help="self- and co-training: a sentence joins when every predicted label has this probability (default 0.9)")
    parser.add_argument("--top-n", type=whole(1), help="self- and co-training: the N most confident pool sentences join instead (no threshold)")
    parser.add_argument("--pseudo-weight", type=positive, default=1.0, help="loss weight of a pseudo-labelled sentence (default 1)")
    parser.add_argument("--target", help="DATASET[:TASK] whose test split scores every round (recorded, never used to choose)")
    train_arguments(parser)


def run(arguments: argparse.Namespace) -> list[dict]:
    from seqtransfer.commands.train import config_from_arguments
    from seqtransfer.config import check_values
    from seqtransfer.errors import SeqTransferError
    from seqtransfer.workflows.selflabel import METHODS, SelfLabelling, SelfLabelSettings, choose_confident

    config = check_values(config_from_arguments(arguments))
    if config.model.tasks or config.data.pseudo_train:
        raise SeqTransferError("selflabel trains one tagging task and writes the pseudo-labelled data itself", hint="drop model.tasks / data.pseudo_train")
    if METHODS[arguments.method].choose is not choose_confident and (arguments.threshold is not None or arguments.top_n is not None):
        raise SeqTransferError(f"{arguments.method} adds every sentence the other two models agree on: --threshold and --top-n do not apply", hint="leave them out")
    if arguments.threshold is not None and arguments.top_n is not None:
        raise SeqTransferError("--threshold and --top-n are two ways to choose sentences", hint="pass one of them")
    settings = SelfLabelSettings(
        method=arguments.method,
        unlabeled=arguments.unlabeled,
        rounds=arguments.rounds,
        pool=arguments.pool,
        threshold=None if arguments.top_n is not None else 0.9 if arguments.threshold is None else arguments.threshold,
        top_n=arguments.top_n,
        pseudo_weight=arguments.pseudo_weight,
        tokenizer=arguments.tokenizer,
        word_column=arguments.word_column,
        target=arguments.target,
    )
    output = Path(arguments.output)
    records = SelfLabelling(config, settings, output, log=lambda line: print(line, flush=True)).run()
    print(f"{len(records) - 1} rounds in {output}; predict with: seqtransfer predict {output} ...")
    return records


COMMAND = Command("self-, co- or tri-training on unlabelled target text, in resumable rounds (labels of the target are never used)", arguments, run)
