"""Unlabelled and labelled attachment scores, as the CoNLL 2018 shared task defines them.

Every token (syntactic word) counts, punctuation included; multiword ranges and empty nodes
are not tokens. UAS: the head is right. LAS: the head and the universal part of the relation
(``acl:relcl`` -> ``acl``) are right. With the same tokenisation on both sides (always the case
here: predictions keep the gold tokens) this equals LAS F1 of ``conll18_ud_eval.py``.
Per relation: precision, recall and F1 of labelled attachment, by universal relation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from seqtransfer.data.class_scores import ClassScores
from seqtransfer.data.trees import Tree, universal_relation


def attachment_scores(gold: Sequence[Tree], predicted: Sequence[Tree]) -> dict:
    """``uas``, ``las`` (percent), token count and per-relation scores under ``per_class``."""
    if len(gold) != len(predicted) or any(len(g) != len(p) for g, p in zip(gold, predicted)):
        raise ValueError("gold and predicted trees differ in sentence or token counts")
    tokens = unlabelled = labelled = 0
    gold_counts: Counter[str] = Counter()
    predicted_counts: Counter[str] = Counter()
    correct_counts: Counter[str] = Counter()
    for gold_tree, predicted_tree in zip(gold, predicted):
        for gold_head, gold_relation, head, relation in zip(gold_tree.heads, gold_tree.relations, predicted_tree.heads, predicted_tree.relations):
            gold_relation, relation = universal_relation(gold_relation), universal_relation(relation)
            tokens += 1
            gold_counts[gold_relation] += 1
            predicted_counts[relation] += 1
            if gold_head == head:
                unlabelled += 1
                if gold_relation == relation:
                    labelled += 1
                    correct_counts[relation] += 1
    percent = lambda count: 100.0 * count / tokens if tokens else 0.0  # noqa: E731
    per_class = {
        relation: ClassScores.from_counts(gold_counts[relation], predicted_counts[relation], correct_counts[relation]).as_dict() for relation in sorted(gold_counts.keys() | predicted_counts.keys())
    }
    return {"uas": percent(unlabelled), "las": percent(labelled), "tokens": tokens, "per_class": per_class}
