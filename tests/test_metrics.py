"""Scores: hand-computed examples and agreement with seqeval's conlleval-compatible mode."""

import random
import warnings

import pytest

from seqtransfer.data.metrics import evaluate, label_scores, span_scores, surface_scores, token_accuracy
from seqtransfer.data.schemes import convert
from seqtransfer.errors import SeqTransferError

seqeval_metrics = pytest.importorskip("seqeval.metrics")  # test-only dependency

GOLD = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
PREDICTED = [["B-PER", "I-PER", "O", "B-PER"], ["B-ORG", "B-LOC"]]


def test_span_scores_by_hand():
    # gold: PER(0,2) LOC(3,4) | ORG(0,1); predicted: PER(0,2) PER(3,4) | ORG(0,1) LOC(1,2)
    scores = span_scores(GOLD, PREDICTED)
    assert (scores.gold_count, scores.predicted_count, scores.correct_count) == (3, 4, 2)
    assert scores.precision == pytest.approx(50.0)
    assert scores.recall == pytest.approx(200 / 3)
    assert scores.f1 == pytest.approx(2 * 50 * (200 / 3) / (50 + 200 / 3))
    person = scores.per_class["PER"]
    assert (person.precision, person.recall, person.f1) == pytest.approx((50.0, 100.0, 200 / 3))
    assert scores.per_class["LOC"].f1 == 0.0 and scores.per_class["ORG"].f1 == pytest.approx(100.0)
    assert scores.as_dict()["per_class"]["PER"]["gold_count"] == 1


def test_surface_scores_count_each_name_once_as_the_wnut17_task_does():
    """Gold names "Paris" (LOC) three times and "Bob" (PER) once; the system finds "Paris" once and
    misses it twice, and adds "Bob" as LOC: conlleval counts 1 of 4 gold entities, surface forms 1
    of 2 gold names (Paris/LOC, Bob/PER) and 1 of 2 predicted ones (Paris/LOC, Bob/LOC). Checked on
    real runs against the task's wnuteval.py outside the repository (equal to 2 decimals)."""
    tokens = [["Paris", "is", "big"], ["Paris", "Paris", "Bob"]]
    gold = [["B-LOC", "O", "O"], ["B-LOC", "B-LOC", "B-PER"]]
    predicted = [["B-LOC", "O", "O"], ["O", "O", "B-LOC"]]
    assert span_scores(gold, predicted).recall == pytest.approx(25.0)
    scores = surface_scores(tokens, gold, predicted)
    assert (scores["surface_precision"], scores["surface_recall"], scores["surface_f1"]) == pytest.approx((50.0, 50.0, 50.0))


def test_span_scores_without_chunks_are_zero():
    scores = span_scores([["O", "O"]], [["O", "O"]])
    assert (scores.precision, scores.recall, scores.f1) == (0.0, 0.0, 0.0)
    assert scores.per_class == {}


def test_token_accuracy_and_label_scores():
    assert token_accuracy(GOLD, PREDICTED) == pytest.approx(100 * 4 / 6)
    assert token_accuracy([], []) == 0.0
    per_label = label_scores([["NN", "VB", "NN"]], [["NN", "NN", "NN"]])
    assert per_label["NN"].precision == pytest.approx(200 / 3) and per_label["NN"].recall == 100.0
    assert per_label["VB"].f1 == 0.0 and per_label["VB"].gold_count == 1


def test_evaluate_returns_flat_scores():
    spans = evaluate(GOLD, PREDICTED, "span_f1")
    assert set(spans) == {"accuracy", "f1", "precision", "recall", "per_class", "gold_count", "predicted_count", "correct_count"}
    assert spans["f1"] == pytest.approx(span_scores(GOLD, PREDICTED).f1)
    accuracy = evaluate(GOLD, PREDICTED, "accuracy")
    assert set(accuracy) == {"accuracy", "per_class"} and "B-PER" in accuracy["per_class"]
    with pytest.raises(SeqTransferError, match="span_f1"):
        evaluate(GOLD, PREDICTED, "bleu")


def test_length_mismatch_is_a_programming_error():
    with pytest.raises(ValueError):
        span_scores([["O"]], [["O", "O"]])
    with pytest.raises(ValueError):
        token_accuracy([["O"]], [])


def _random_tags(generator: random.Random, prefixes: str) -> list[str]:
    """Random (often invalid) tags: I- after O, type changes, hyphenated types."""
    types = ["PER", "LOC", "creative-work", "product-name"]
    return ["O" if (prefix := generator.choice(prefixes)) == "O" else f"{prefix}-{generator.choice(types)}" for _ in range(generator.randint(0, 15))]


def _random_corpus(generator: random.Random, prefixes: str) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted corpora of a few sentences with the same lengths."""
    gold = [_random_tags(generator, prefixes) for _ in range(generator.randint(1, 6))]
    predicted = [[generator.choice([tag, tag, *_random_tags(generator, prefixes), "O"]) for tag in tags] for tags in gold]
    return gold, predicted


def _assert_same_as_seqeval(gold, predicted):
    scores = span_scores(gold, predicted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on zero division
        assert scores.precision == pytest.approx(100 * seqeval_metrics.precision_score(gold, predicted))
        assert scores.recall == pytest.approx(100 * seqeval_metrics.recall_score(gold, predicted))
        assert scores.f1 == pytest.approx(100 * seqeval_metrics.f1_score(gold, predicted))
        report = seqeval_metrics.classification_report(gold, predicted, output_dict=True)
    for chunk_type, expected in report.items():
        if chunk_type.endswith(" avg"):
            continue
        ours = scores.per_class[chunk_type]
        assert ours.precision == pytest.approx(100 * expected["precision"])
        assert ours.recall == pytest.approx(100 * expected["recall"])
        assert ours.f1 == pytest.approx(100 * expected["f1-score"])
        assert ours.gold_count == expected["support"]


@pytest.mark.parametrize("prefixes", ["BIOO", "IIOO"])  # IOB2-like and IOB1-like random tags
def test_span_scores_match_seqeval_on_random_tags(prefixes):
    generator = random.Random(len(prefixes) + prefixes.count("B"))
    for _ in range(300):
        _assert_same_as_seqeval(*_random_corpus(generator, prefixes))


def test_span_scores_match_seqeval_on_valid_bioes():
    generator = random.Random(3)
    for _ in range(200):
        gold, predicted = _random_corpus(generator, "BIOO")
        gold = [convert(convert(tags, "iob1", "iob2"), "iob2", "bioes") for tags in gold]
        predicted = [convert(convert(tags, "iob1", "iob2"), "iob2", "bioes") for tags in predicted]
        _assert_same_as_seqeval(gold, predicted)
