"""Tag schemes: conlleval chunks, lossless conversion, scheme violations."""

import random

import pytest

from seqtransfer.data.schemes import SCHEMES, check_scheme, chunks, convert, find_violation, split_tag
from seqtransfer.errors import SeqTransferError

# One sentence, three chunks (PER, LOC, LOC adjacent), written in each scheme.
IOB1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "O"]
IOB2 = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O"]
BIOES = ["B-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC", "O"]
EXPECTED = [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6)]
WRITTEN = {"iob1": IOB1, "iob2": IOB2, "bioes": BIOES}


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "bioes"])
def test_chunks_read_every_scheme(scheme):
    assert chunks(WRITTEN[scheme]) == EXPECTED


def test_chunks_follow_conlleval_rules():
    assert chunks(["O", "I-PER", "I-PER"]) == [("PER", 1, 3)]  # I- after O starts a chunk
    assert chunks(["B-PER", "I-LOC"]) == [("PER", 0, 1), ("LOC", 1, 2)]  # type change
    assert chunks(["B-PER", "B-PER"]) == [("PER", 0, 1), ("PER", 1, 2)]
    assert chunks(["I-PER", "B-PER", "I-PER"]) == [("PER", 0, 1), ("PER", 1, 3)]
    assert chunks(["S-PER", "S-PER"]) == [("PER", 0, 1), ("PER", 1, 2)]
    assert chunks(["E-PER", "B-PER", "E-PER"]) == [("PER", 0, 1), ("PER", 1, 3)]
    assert chunks(["B-PER"]) == [("PER", 0, 1)]  # the sentence end closes a chunk
    assert chunks([]) == [] and chunks(["O", "O"]) == []


def test_chunks_keep_hyphenated_types():
    tags = ["B-creative-work", "I-creative-work", "B-person", "O"]
    assert chunks(tags) == [("creative-work", 0, 2), ("person", 2, 3)]
    assert split_tag("I-creative-work") == ("I", "creative-work")


def test_chunks_accept_lower_case_prefixes():
    tags = ["b-np", "i-np", "b-np", "b-vp", "o", "i-pp"]
    assert chunks(tags) == [("np", 0, 2), ("np", 2, 3), ("vp", 3, 4), ("pp", 5, 6)]


@pytest.mark.parametrize("source", ["iob1", "iob2", "bioes"])
@pytest.mark.parametrize("target", ["iob1", "iob2", "bioes"])
def test_convert_between_schemes(source, target):
    assert convert(WRITTEN[source], source, target) == WRITTEN[target]


def _random_iob2(generator: random.Random, length: int) -> list[str]:
    """A valid IOB2 sentence with random chunks of hyphenated and plain types."""
    tags = []
    while len(tags) < length:
        if generator.random() < 0.4:
            tags.append("O")
            continue
        chunk_type = generator.choice(["PER", "LOC", "creative-work"])
        size = generator.randint(1, 3)
        tags += [f"B-{chunk_type}"] + [f"I-{chunk_type}"] * (size - 1)
    return tags


def test_conversion_round_trips_are_lossless():
    generator = random.Random(7)
    for _ in range(300):
        iob2 = _random_iob2(generator, generator.randint(0, 12))
        for target in ("iob1", "bioes"):
            converted = convert(iob2, "iob2", target)
            assert find_violation(converted, target) is None
            assert chunks(converted) == chunks(iob2)
            assert convert(converted, target, "iob2") == iob2
        iob1 = convert(iob2, "iob2", "iob1")
        assert convert(convert(iob1, "iob1", "bioes"), "bioes", "iob1") == iob1


def test_convert_preserves_lower_case():
    tags = ["b-np", "i-np", "o", "b-vp"]
    assert convert(tags, "iob2", "bioes") == ["b-np", "e-np", "o", "s-vp"]
    assert convert(tags, "iob2", "iob1") == ["i-np", "i-np", "o", "i-vp"]


def test_convert_rejects_plain_labels():
    with pytest.raises(SeqTransferError, match="cannot convert"):
        convert(["NN"], "none", "iob2")
    assert convert(["NN"], "none", "none") == ["NN"]


@pytest.mark.parametrize(
    ("tags", "scheme", "index", "words"),
    [
        (["O", "I-PER"], "iob2", 1, "B-PER"),
        (["B-LOC", "I-PER"], "iob2", 1, "B-PER"),
        (["I-PER"], "iob2", 0, "sentence start"),
        (["O", "B-PER"], "iob1", 1, "I-PER"),
        (["I-LOC", "B-PER"], "iob1", 1, "I-PER"),
        (["O", "E-PER"], "bioes", 1, "B-PER"),
        (["B-PER", "O"], "bioes", 1, "not closed"),
        (["B-PER", "I-PER"], "bioes", 1, "not closed by E-PER"),
        (["B-PER", "E-LOC"], "bioes", 1, "not closed"),
        (["O", "X-PER"], "iob2", 1, "unknown prefix"),
        (["S-PER"], "iob2", 0, "unknown prefix"),
        (["B"], "iob2", 0, "no type"),
        (["O-PER"], "iob1", 0, "no type"),
    ],
)
def test_find_violation_reports_first_bad_tag(tags, scheme, index, words):
    violation = find_violation(tags, scheme)
    assert violation is not None and violation[0] == index and words in violation[1]


def test_find_violation_accepts_valid_sentences():
    for scheme, tags in WRITTEN.items():
        assert find_violation(tags, scheme) is None
    assert find_violation(["b-np", "i-np", "o", "b-vp"], "iob2") is None
    assert find_violation(["I-X", "B-X", "I-Y"], "iob1") is None
    assert find_violation(["anything", "I-PER"], "none") is None


def test_unknown_scheme_lists_valid_names():
    with pytest.raises(SeqTransferError) as caught:
        find_violation(["O"], "bilou")
    assert all(name in str(caught.value) for name in SCHEMES)
    assert check_scheme("IOB2") == "iob2"


def test_a_run_may_train_and_score_in_another_span_scheme(tmp_path):
    """data.convert_scheme=bioes: every split converted, the labels learnt are BIOES, the predictions
    written are scored in it, and the entity F1 is that of the same spans read from IOB2."""
    from conftest import FIXTURES, tiny_train_arguments

    from seqtransfer.cli import run
    from seqtransfer.data.conll import read_conll
    from seqtransfer.data.metrics import evaluate
    from seqtransfer.experiments.evidence import evidence_of

    output = tmp_path / "bioes"
    metrics = run([*tiny_train_arguments(output, epochs=2), "data.convert_scheme=bioes"])
    rows = [[line.split() for line in block.splitlines()] for block in (output / "predictions" / "test.conll").read_text().strip().split("\n\n")]
    gold = [sentence.labels("ner") for sentence in read_conll(FIXTURES / "tiny_ner_test.conll", ["word", "ner"])]
    assert [[row[1] for row in sentence] for sentence in rows] == [convert(sentence, "iob2", "bioes") for sentence in gold]  # the gold written in BIOES
    predicted = [[row[2] for row in sentence] for sentence in rows]
    assert {label.split("-")[0] for sentence in predicted for label in sentence} <= {"B", "I", "E", "S", "O"}
    assert metrics["test"]["f1"] == pytest.approx(evaluate([convert(sentence, "iob2", "bioes") for sentence in gold], predicted, "span_f1")["f1"])
    plain = tmp_path / "iob2"
    run(tiny_train_arguments(plain, epochs=2))  # the same spans in IOB2: its runs and the BIOES run are tested as a pair
    assert evidence_of(output / "predictions", "span_f1")["gold"] == evidence_of(plain / "predictions", "span_f1")["gold"]
    with pytest.raises(SeqTransferError, match="data.convert_scheme"):
        run([*tiny_train_arguments(tmp_path / "bad", epochs=1), "data.convert_scheme=bilou"])


def test_each_part_of_joined_datasets_keeps_its_own_labels_until_they_are_joined():
    """a+b with data.convert_scheme: the parts are read in their own labels (a label map's keys are
    those), mapped and joined, and only the joined data is converted (load_task_data's last step)."""
    from seqtransfer.config import DataConfig
    from seqtransfer.corpora.task_data import part_config

    part = part_config(DataConfig(dataset="tweebank:upos+ud_ewt:upos", convert_scheme="bioes", label_map="map.yaml"), "ud_ewt:upos")
    assert (part.dataset, part.task, part.convert_scheme, part.label_map) == ("ud_ewt", "upos", None, None)
