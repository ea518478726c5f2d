"""Pseudo labels from one or several runs (one model per source, say) for unlabelled text.

Several runs label together: ``average`` (their per-token label distributions averaged, labels
matched by name, as the experiment grid's ensembles) or ``vote``. With ``threshold`` or ``top_n``
only the sentences the labeller is surest of are kept (its confidence: the lowest probability of
a predicted label; of the averaged distributions for ``average``). The output is ``word TAB label``
CoNLL, ready for ``--train`` (a target model from pseudo labels alone) or ``data.pseudo_train``
(added to gold data). ``seqtransfer pseudolabel`` and the experiment grid's ``pseudo_labels``
methods both write it here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from seqtransfer.errors import SeqTransferError
from seqtransfer.rundir import load_run, member_directories
from seqtransfer.workflows.combination import model_predictions, vote
from seqtransfer.workflows.ensemble import averaged_distributions, check_label_sets
from seqtransfer.workflows.selflabel import write_pseudo

COMBINATIONS = ("average", "vote")


def ensemble_labels(runs, tokens) -> tuple[list[list[str]], np.ndarray]:
    """Averaged distributions of the runs: arg-max labels and each sentence's lowest arg-max probability."""
    labels, averaged = averaged_distributions(runs, tokens)
    return ([[labels[index] for index in sentence.argmax(-1).tolist()] for sentence in averaged], np.array([float(sentence.max(-1).values.min()) for sentence in averaged]))


def label_together(runs: Sequence, tokens: Sequence[Sequence[str]], combination: str = "average") -> tuple[list[list[str]], np.ndarray]:
    """Every sentence's labels from the loaded ``runs`` together, and the labeller's confidence in each."""
    for loaded in runs:
        if not hasattr(loaded.model, "probabilities") or getattr(loaded.model, "task_kind", "tagging") != "tagging":
            raise SeqTransferError("pseudo-labelling needs tagging runs (per-token label distributions)", path=loaded.directory)
    if combination not in COMBINATIONS:
        raise SeqTransferError(f"unknown combination '{combination}'", hint=f"use one of: {', '.join(COMBINATIONS)}")
    if len(runs) == 1:
        return model_predictions(runs[0], tokens)
    check_label_sets(runs)  # voting runs in two tag sets would be as meaningless as averaging them
    if combination == "average":
        return ensemble_labels(runs, tokens)
    predictions = [model_predictions(loaded, tokens) for loaded in runs]
    return vote([labels for labels, _ in predictions]), np.min([confidence for _, confidence in predictions], axis=0)


def check_selection(threshold: float | None, top_n: int | None) -> None:
    """The command's --threshold in (0, 1] and --top-n of at least 1, each one line."""
    if threshold is not None and not 0 < threshold <= 1:
        raise SeqTransferError(f"--threshold must be in (0, 1], got {threshold}")
    if top_n is not None and top_n < 1:
        raise SeqTransferError(f"--top-n must be at least 1, got {top_n}")


def kept_sentences(confidence: np.ndarray, threshold: float | None = None, top_n: int | None = None) -> list[int]:
    """The sentences kept, in corpus order: the ``top_n`` surest, those at least ``threshold`` sure, or all."""
    if top_n is not None:
        return sorted(np.argsort(-confidence, kind="stable")[:top_n].tolist())
    if threshold is not None:
        return [index for index in range(len(confidence)) if confidence[index] >= threshold]
    return list(range(len(confidence)))


def write_pseudo_labels(
    output: str | Path, run_directories: Sequence[str | Path], tokens: Sequence[Sequence[str]], combination: str = "average", threshold: float | None = None, top_n: int | None = None
) -> dict:
    """Label ``tokens`` with the runs, keep the surest sentences, write them to ``output`` (whole or
    not at all); returns how many sentences of how many were kept."""
    check_selection(threshold, top_n)
    runs = [load_run(member) for directory in run_directories for member in member_directories(directory)]  # an ensemble's folder: its runs
    labels, confidence = label_together(runs, tokens, combination)
    kept = kept_sentences(confidence, threshold, top_n)
    write_pseudo(Path(output), [tokens[index] for index in kept], [labels[index] for index in kept])
    return {"sentences": len(kept), "of": len(tokens), "tokens": sum(len(tokens[index]) for index in kept), "runs": len(runs), "output": str(output)}
