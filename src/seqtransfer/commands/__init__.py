"""Registry of CLI commands: name -> Command (an explicit dict, no import side effects)."""

from __future__ import annotations

from seqtransfer.commands import analyze, datasets, ensemble, evaluate, experiment, export, finetune_lm, predict, pretrain_lm, pseudolabel, report, selflabel, train, unify, word_vectors
from seqtransfer.commands.base import Command

COMMANDS: dict[str, Command] = {
    "train": train.COMMAND,
    "transfer": train.TRANSFER_COMMAND,
    "evaluate": evaluate.COMMAND,
    "predict": predict.COMMAND,
    "datasets": datasets.COMMAND,
    "experiment": experiment.COMMAND,
    "report": report.COMMAND,
    "analyze": analyze.COMMAND,
    "unify": unify.COMMAND,
    "selflabel": selflabel.COMMAND,
    "pseudolabel": pseudolabel.COMMAND,
    "ensemble": ensemble.COMMAND,
    "pretrain-lm": pretrain_lm.COMMAND,
    "finetune-lm": finetune_lm.COMMAND,
    "word-vectors": word_vectors.COMMAND,
    "export": export.COMMAND,
}
