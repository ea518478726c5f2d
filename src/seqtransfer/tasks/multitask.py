"""The output of a multi-task model: every task's prediction for each sentence, in one file.

A prediction is ``{task: prediction}`` (label strings of a tagging task, a Tree of a dependency
task). ``format_output`` writes CoNLL-U, ten columns, so that UD tools (``conll18_ud_eval.py``,
the UD validator) read it: a task named ``pos`` or ``upos`` (any case) fills UPOS, a dependency
task HEAD and DEPREL, and every other tagging task goes into MISC as ``TASK=label``:

    1	@user	_	NOUN	_	_	2	nsubj	_	CK=B-NP|NER=O

Multi-word token and empty-node lines of a CoNLL-U input are left out (the columns differ).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from seqtransfer.data.conllu import format_sentence
from seqtransfer.data.corpus import Sentence
from seqtransfer.data.trees import HEAD, RELATION, Tree
from seqtransfer.errors import SeqTransferError

CONLLU_COLUMNS = ("id", "word", "lemma", "upos", "xpos", "feats", HEAD, RELATION, "deps", "misc")
UPOS_TASKS = ("pos", "upos")


class MultiTaskOutput:
    """What a multi-task model's decoding becomes, built from its tasks' kinds."""

    name = "multitask"

    def __init__(self, kinds: dict) -> None:
        self.kinds = kinds  # task -> task kind, low -> high
        dependency = [task for task, kind in kinds.items() if kind.name == "dependency"]
        if len(dependency) > 1:
            raise SeqTransferError(f"several dependency tasks ({', '.join(dependency)}) cannot share the HEAD and DEPREL columns", hint="keep one parsing task per model")
        self.tagging = [task for task, kind in kinds.items() if kind.name == "tagging"]
        self.upos = next((task for task in self.tagging if task.lower() in UPOS_TASKS), None)  # the task whose labels fill UPOS
        self.columns = CONLLU_COLUMNS

    def read_decoded(self, decoded: dict, lengths: np.ndarray, labels: dict) -> list[dict]:
        """task -> decoding, and task -> label vocabulary -> one {task: prediction} per sentence."""
        per_task = {task: self.kinds[task].read_decoded(decoded[task], lengths, labels[task]) for task in decoded}
        return [{task: predictions[row] for task, predictions in per_task.items()} for row in range(len(lengths))]

    def with_predictions(self, sentence: Sentence, prediction: dict) -> Sentence:
        length = len(sentence.tokens)
        columns = {"id": [str(position) for position in range(1, length + 1)]}
        misc: list[list[str]] = [[] for _ in range(length)]
        for task, value in prediction.items():
            if isinstance(value, Tree):
                columns.update({HEAD: [str(head) for head in value.heads], RELATION: list(value.relations)})
            elif task == self.upos:
                columns["upos"] = list(value)
            else:
                for position, label in enumerate(value):
                    misc[position].append(f"{task.upper()}={label.replace('|', '/')}")
        columns["misc"] = ["|".join(pairs) or "_" for pairs in misc]
        return dataclasses.replace(sentence, columns=columns, extra_lines=[])

    def format_output(self, sentences: Sequence[Sentence], predicted: Sequence[dict]) -> str:
        return "".join(format_sentence(self.with_predictions(sentence, prediction), self.columns) for sentence, prediction in zip(sentences, predicted))

    def for_user(self, prediction: dict) -> dict:
        """{task: that task's output} (labels per token; (head, relation) pairs for parsing)."""
        return {task: self.kinds[task].for_user(value) for task, value in prediction.items()}
