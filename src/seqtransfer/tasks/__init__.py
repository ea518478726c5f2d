"""Task kinds by the shape of what they predict. Adding a kind = one module + one line here.

A kind says how gold annotation is read from sentences and checked, what the label
vocabulary holds, how it becomes the batch's targets, how a model's decoding becomes
predictions, how predictions are written, and which metrics and model architectures serve it.
A model class names its kind in ``task_kind``; a dataset's task names it in ``DatasetSpec.kinds``.
"""

from __future__ import annotations

from seqtransfer.errors import SeqTransferError
from seqtransfer.tasks.dependency import DEPENDENCY
from seqtransfer.tasks.multitask import MultiTaskOutput
from seqtransfer.tasks.regression import REGRESSION
from seqtransfer.tasks.sentence import SENTENCE
from seqtransfer.tasks.tagging import TAGGING

TASK_KINDS = {"tagging": TAGGING, "dependency": DEPENDENCY, "sentence": SENTENCE, "regression": REGRESSION}


def get_task_kind(name: str):
    if name not in TASK_KINDS:
        raise SeqTransferError(f"unknown task kind '{name}'", hint=f"use one of: {', '.join(TASK_KINDS)}")
    return TASK_KINDS[name]


def kind_of(model):
    """What a model's decoding is: its kind, or for a multi-task model the kinds of its tasks."""
    if model.task_kind == "multitask":
        return MultiTaskOutput({task: get_task_kind(model.kinds[task]) for task in model.order})
    return get_task_kind(model.task_kind)
