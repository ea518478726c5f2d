"""seqtransfer export (issue 57, point 1): a fine-tuned Transformer tagger as a Hugging Face folder
that transformers predicts with exactly as seqtransfer does."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

transformers = pytest.importorskip("transformers")

RUNS = FIXTURES / "runs"
SENTENCES = [["john", "lives", "in", "new", "york", "!"], ["@", "mary", "."], ["new", "york"]]


def words_of(labels: list[str], words: list[str]) -> list[tuple[str, str]]:
    """IOB2 labels -> (entity type, its words joined by spaces) in order: what pipeline groups give."""
    spans, current = [], None
    for word, label in zip(words, labels):
        if label.startswith("B-") or (label.startswith("I-") and (current is None or current[0] != label[2:])):
            current = [label[2:], [word]]
            spans.append(current)
        elif label.startswith("I-"):
            current[1].append(word)
        else:
            current = None
    return [(kind, " ".join(part)) for kind, part in spans]


@pytest.mark.parametrize("name", ["encoder_finetune", "lora"])
def test_an_exported_tagger_predicts_as_seqtransfer_does(tmp_path, monkeypatch, name):
    import torch

    import seqtransfer
    from seqtransfer.cli import run

    monkeypatch.chdir(FIXTURES)  # the fixture runs name their encoder relative to it
    output = tmp_path / "hf"
    run(["export", f"runs/v1_{name}", "--output", str(output)])
    ours = seqtransfer.load(f"runs/v1_{name}", device="cpu").predict(SENTENCES)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(output))
    model = transformers.AutoModelForTokenClassification.from_pretrained(str(output)).eval()
    for words, expected in zip(SENTENCES, ours):
        encoded = tokenizer(words, is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            predicted = model(**encoded).logits[0].argmax(-1).tolist()
        first = {}
        for position, word in enumerate(encoded.word_ids()):
            if word is not None and word not in first:
                first[word] = model.config.id2label[predicted[position]]
        assert [first[index] for index in range(len(words))] == expected
    pipeline = transformers.pipeline("token-classification", model=str(output), tokenizer=str(output), aggregation_strategy="first")
    for words, expected in zip(SENTENCES, ours):
        text = " ".join(words)
        groups = [(group["entity_group"], text[group["start"] : group["end"]]) for group in pipeline(text)]  # offsets: the tiny tokenizer has no decoder
        assert groups == words_of(expected, words)


@pytest.mark.parametrize(
    "name, reason", [("tagger_crf", "this run's encoder is words"), ("adapter", "Houlsby adapters"), ("sentence", "a sentence model reads the raw [CLS]"), ("parser", "dependency model")]
)
def test_what_has_no_hugging_face_equivalent_is_one_line(tmp_path, monkeypatch, capsys, name, reason):
    from seqtransfer.cli import main

    monkeypatch.chdir(FIXTURES)
    assert main(["export", f"runs/v1_{name}", "--output", str(tmp_path / "hf")]) != 0
    error = capsys.readouterr().err
    assert "cannot export this run to Hugging Face" in error and reason in error and "Traceback" not in error
    assert not (tmp_path / "hf").exists()
