"""The training split as the options shape it (:func:`training_sentences`): a random subset
(``data.train_fraction``), a bootstrap sample (``data.bootstrap``), pseudo-labelled sentences
(``data.pseudo_train``), and the selection and weighting of source training sentences by their
likeness to the target domain, described here.

Options of the one training loop (``data.select_*``), applied to the training split before the
vocabularies are built:

    data.select_like=tweets_unlabeled   unlabelled target text (any entry of corpora/unlabeled.py)
    data.select_by=moore_lewis          moore_lewis | js: how a sentence is scored (lower = more target-like)
    data.select_top=50                  hard selection: keep the 50 % most target-like sentences
    data.select_weighting=true          soft selection: weight each sentence's loss by its rank

Scores: **moore_lewis** (Moore & Lewis 2010) is the cross-entropy difference H_target(s) −
H_source(s), in bits per token, under two word trigram models with interpolated Kneser–Ney
smoothing (data/trigram_lm.py): one of the target text, one of a random sample of the
training sentences as large (in tokens) as the target text, as Moore & Lewis sample their
general-domain model. **js** is the Jensen–Shannon divergence between the sentence's word
distribution and the target text's (Ruder & Plank 2017's measure, per sentence).

Soft weights are linear in the rank (not in the score, whose scale differs by measure): the most
target-like of n sentences weighs 2n / (n + 1), the least 2 / (n + 1); they average to 1, so the
loss keeps its scale. The dev set stays the user's (source) dev set: nothing reads target labels.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from seqtransfer.corpora.unlabeled import read_unlabeled
from seqtransfer.data.conll import read_conll
from seqtransfer.data.trigram_lm import TrigramLM, normalize, sample_sentences, unigram_counts
from seqtransfer.errors import SeqTransferError

Log = Callable[[str], None]


def moore_lewis_scores(sentences: Sequence[Sequence[str]], target: Sequence[Sequence[str]], seed: int) -> np.ndarray:
    """H_target(s) − H_source(s) per sentence (bits per token, ``</s>`` included)."""
    target_model = TrigramLM(target)
    source_model = TrigramLM(sample_sentences(sentences, sum(map(len, target)), seed))
    scores = np.empty(len(sentences))
    for index, sentence in enumerate(sentences):
        target_bits, count = target_model.sentence_bits(sentence)
        source_bits, _ = source_model.sentence_bits(sentence)
        scores[index] = (target_bits - source_bits) / count
    return scores


def js_scores(sentences: Sequence[Sequence[str]], target: Sequence[Sequence[str]]) -> np.ndarray:
    """JS divergence (bits) between each sentence's word distribution P and the target's Q.

    A word of Q missing from the sentence adds q_w / 2 · 2 = q_w to the sum's double, so
    JS = ½ [Σ_{w ∈ s} (p log2(p/m) + q log2(q/m)) + 1 − Σ_{w ∈ s} q_w]: linear in the sentence's length.
    """
    counts = unigram_counts(target)
    total = sum(counts.values())
    scores = np.empty(len(sentences))
    for index, sentence in enumerate(sentences):
        words = Counter(normalize(word) for word in sentence)
        length = sum(words.values())
        inside, covered = 0.0, 0.0
        for word, count in words.items():
            p, q = count / length, counts[word] / total
            mean = (p + q) / 2
            inside += p * math.log2(p / mean) + (q * math.log2(q / mean) if q else 0.0)
            covered += q
        scores[index] = (inside + 1.0 - covered) / 2
    return scores


SCORES = {"moore_lewis": lambda sentences, target, seed: moore_lewis_scores(sentences, target, seed), "js": lambda sentences, target, seed: js_scores(sentences, target)}


def rank_weights(scores: np.ndarray) -> np.ndarray:
    """Loss weights linear in the rank of the score (lowest score = heaviest), mean 1."""
    count = len(scores)
    ranks = np.empty(count)
    ranks[np.argsort(scores, kind="stable")] = np.arange(count)
    return (2.0 * (count - ranks) / (count + 1)).astype(np.float32)


def kept_indices(scores: np.ndarray, top: float) -> np.ndarray:
    """Indices (in corpus order) of the ceil(n · top / 100) lowest scores."""
    keep = max(1, math.ceil(len(scores) * top / 100.0))
    return np.sort(np.argsort(scores, kind="stable")[:keep])


def select_training_data(config, data, log: Log) -> np.ndarray | None:
    """Apply ``data.select_*`` to ``data``'s training split (hard selection in place); returns the
    soft weights of the kept sentences, or None."""
    data_config = config.data
    if data_config.select_like is None:
        if data_config.select_top is not None or data_config.select_weighting:
            raise SeqTransferError("data.select_top / data.select_weighting need target text to compare with", hint="set data.select_like=DATASET, tweets_unlabeled or a text file")
        return None
    if data_config.select_top is None and not data_config.select_weighting:
        raise SeqTransferError("data.select_like is set but neither data.select_top nor data.select_weighting", hint="set data.select_top=PERCENT (hard) and/or data.select_weighting=true (soft)")

    target = read_unlabeled(data_config.select_like, data_config.data_dir, data_config.select_tokenizer, data_config.select_word_column, "data.select_word_column")
    sentences = data.splits["train"]
    scores = SCORES[data_config.select_by]([sentence.tokens for sentence in sentences], target, config.train.seed)
    if data_config.select_top is not None:
        kept = kept_indices(scores, data_config.select_top)
        data.splits["train"] = [sentences[index] for index in kept]
        scores = scores[kept]
        log(f"selection: kept {len(kept)} of {len(sentences)} training sentences ({data_config.select_top:g} %), the most like {data_config.select_like} by {data_config.select_by}")
    if not data_config.select_weighting:
        return None
    weights = rank_weights(scores)
    log(f"selection: training sentences weighted by likeness to {data_config.select_like} ({data_config.select_by}; weights {weights.min():.2f}–{weights.max():.2f}, mean 1)")
    return weights


def bootstrap_sample(sentences: list, seed: int) -> list:
    """As many sentences as given, drawn with replacement (seeded): tri-training's samples."""
    generator = np.random.default_rng(seed)
    return [sentences[index] for index in generator.integers(0, len(sentences), len(sentences))]


def pseudo_labelled(path: str, data) -> list:
    """The sentences of a pseudo-labelled file (TAB-separated ``word label``), labelled in the task's
    column (their labels join the label vocabulary as gold ones do)."""
    return read_conll(path, columns=["word", data.column], separator="tab")


def random_subset(sentences: list, fraction: float, seed: int) -> list:
    """round(n * fraction) sentences (at least 1) drawn without replacement with ``seed``, in corpus order:
    every method trained with the same seed sees the same subset."""
    count = max(1, round(len(sentences) * fraction))
    chosen = np.sort(np.random.default_rng(seed).choice(len(sentences), count, replace=False))
    return [sentences[index] for index in chosen]


def training_sentences(config, data, log: Log):
    """The training split as the options make it: a bootstrap sample (``data.bootstrap``), hard and
    soft selection (``data.select_*``), pseudo-labelled sentences (``data.pseudo_train``); returns
    the per-sentence loss weights, or None when every sentence weighs 1."""
    weighted = config.data.select_weighting or (config.data.pseudo_train and config.data.pseudo_weight != 1.0)
    if weighted and not data.kind.sentence_weights:
        raise SeqTransferError(f"data.select_weighting and data.pseudo_weight weight token losses: {data.kind.name} tasks do not take them", hint="use data.select_top (hard selection) instead")
    if config.data.train_fraction is not None:
        data.splits["train"] = random_subset(data.splits["train"], config.data.train_fraction, config.train.seed)
        log(f"training subset: {len(data.splits['train'])} sentences ({config.data.train_fraction:.0%}, drawn with seed {config.train.seed})")
    if config.data.bootstrap is not None:
        data.splits["train"] = bootstrap_sample(data.splits["train"], config.data.bootstrap)
        log(f"bootstrap sample (seed {config.data.bootstrap}): {len({id(sentence) for sentence in data.splits['train']})} distinct of {len(data.splits['train'])} training sentences")
    weights = select_training_data(config, data, log)
    if not config.data.pseudo_train:
        return weights
    pseudo = pseudo_labelled(config.data.pseudo_train, data)
    gold_weights = weights if weights is not None else np.ones(len(data.splits["train"]), dtype=np.float32)
    data.splits["train"] = data.splits["train"] + pseudo
    log(f"pseudo-labelled: {len(pseudo)} sentences, {sum(map(len, pseudo))} tokens from {config.data.pseudo_train} (weight {config.data.pseudo_weight:g})")
    if weights is None and config.data.pseudo_weight == 1.0:
        return None
    return np.concatenate([gold_weights, np.full(len(pseudo), config.data.pseudo_weight, dtype=np.float32)])
