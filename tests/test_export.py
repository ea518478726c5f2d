"""seqtransfer export (issue 57, point 1): a fine-tuned Transformer tagger, sentence classifier or
regressor as a Hugging Face folder that transformers predicts with exactly as seqtransfer does."""

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


def save_tiny_mpnet(folder):
    """A random 2-layer MPNet (no token types; its sequence classifier: dense + tanh -> out_proj) with the tiny WordPiece tokenizer."""
    import torch
    from test_encoders import VOCAB, tiny_wordpiece
    from transformers import MPNetConfig, MPNetModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tiny_wordpiece(), unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]", model_input_names=["input_ids", "attention_mask"]
    )
    MPNetModel(MPNetConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, max_position_embeddings=40, pad_token_id=0)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


TEXTS = ["john lives in new york", "abc", "@ mary !", "new york new york"]
PAIRS = [("john lives", "in new york"), ("abc", "abc"), ("@", "mary !")]


@pytest.mark.parametrize("family, task", [("bert", "sentence"), ("mpnet", "sentence"), ("bert", "regression"), ("bert", "lora")])
def test_an_exported_sentence_model_predicts_as_seqtransfer_does(tmp_path, monkeypatch, family, task):
    """A sentence classifier or pair regressor that reads the pooler (model.sentence_reader=pooler) is an
    AutoModelForSequenceClassification whose text-classification pipeline gives seqtransfer's labels or scores."""
    from conftest import TINY_MODEL
    from test_encoders import save_tiny_encoder

    import seqtransfer
    from seqtransfer.cli import run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    encoder = (save_tiny_mpnet if family == "mpnet" else save_tiny_encoder)(tmp_path / "encoder")
    data = (
        ["--train", str(FIXTURES / "tiny_similarity.tsv"), "--dev", str(FIXTURES / "tiny_similarity.tsv"), "--columns", "text,text_b,score"]
        if task == "regression"
        else ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
    )
    lora = ["model.encoder_adapter=lora", "model.lora_rank=2"] if task == "lora" else []
    trained = [*TINY_MODEL, f"model.encoder={encoder}", "model.encoder_mode=finetune", "model.sentence_reader=pooler", "train.learning_rate=0.01", *lora]
    run(["train", *data, "--epochs", "2", "--output", str(tmp_path / "run"), "--quiet", *trained])
    note = run(["export", str(tmp_path / "run"), "--output", str(tmp_path / "hf")])
    assert note["class"] == ("MPNet" if family == "mpnet" else "Bert") + "ForSequenceClassification"
    predictor = seqtransfer.load(tmp_path / "run", device="cpu")
    pipeline = transformers.pipeline("text-classification", model=str(tmp_path / "hf"), tokenizer=str(tmp_path / "hf"))
    if task == "regression":
        ours = predictor.predict([f"{first} [SEP] {second}" for first, second in PAIRS])
        theirs = [pipeline({"text": first, "text_pair": second}, function_to_apply="none")["score"] for first, second in PAIRS]
        assert theirs == pytest.approx(ours, abs=1e-5) and len(set(ours)) > 1
        return
    ours = predictor.predict(TEXTS)
    assert [result["label"] for result in pipeline(TEXTS)] == ours
    import numpy
    import torch

    from seqtransfer.data.batching import encode_sentences, make_batch

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "hf")).eval()
    batch = make_batch(encode_sentences([text.split() for text in TEXTS], predictor.run.vocabularies), numpy.arange(len(TEXTS)))
    with torch.no_grad():  # the scores themselves agree, not only their argmax (padded together in one batch)
        theirs = model(**tokenizer(TEXTS, return_tensors="pt", padding=True)).logits
        assert torch.allclose(predictor.run.model.sentence_scores(batch), theirs, atol=1e-5)


@pytest.mark.parametrize("name, reason", [("tagger_crf", "this run's encoder is words"), ("adapter", "Houlsby adapters"), ("sentence", "this run's encoder is words"), ("parser", "dependency model")])
def test_what_has_no_hugging_face_equivalent_is_one_line(tmp_path, monkeypatch, capsys, name, reason):
    from seqtransfer.cli import main

    monkeypatch.chdir(FIXTURES)
    assert main(["export", f"runs/v1_{name}", "--output", str(tmp_path / "hf")]) != 0
    error = capsys.readouterr().err
    assert "cannot export this run to Hugging Face" in error and reason in error and "Traceback" not in error
    assert not (tmp_path / "hf").exists()


def test_a_sentence_head_that_reads_no_pooler_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    from conftest import TINY_MODEL
    from test_encoders import save_tiny_encoder

    from seqtransfer.cli import main, run

    monkeypatch.setenv("SEQTRANSFER_CACHE", str(tmp_path / "cache"))
    encoder = save_tiny_encoder(tmp_path / "encoder")
    data = ["--train", str(FIXTURES / "tiny_sentiment_train.tsv"), "--dev", str(FIXTURES / "tiny_sentiment_dev.tsv")]
    run(["train", *data, "--epochs", "1", "--output", str(tmp_path / "run"), "--quiet", *TINY_MODEL, f"model.encoder={encoder}", "model.encoder_mode=finetune"])
    assert main(["export", str(tmp_path / "run"), "--output", str(tmp_path / "hf")]) != 0
    error = capsys.readouterr().err
    assert "reads 'pooled'" in error and "model.sentence_reader=pooler" in error and "Traceback" not in error
    assert not (tmp_path / "hf").exists()
    assert main(["train", *data, "--epochs", "1", "--output", str(tmp_path / "words"), "--quiet", *TINY_MODEL, "model.sentence_reader=pooler"]) != 0  # a BiLSTM has no pooler
    assert "reads a fine-tuned Transformer's own pooler" in capsys.readouterr().err
