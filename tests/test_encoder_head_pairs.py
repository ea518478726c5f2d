"""Every encoder family of the registry with every task kind's head (issue 49, point 7): each
pair the registries allow trains, saves its run, loads back and predicts; a pair they refuse is
one line, and the refused pairs are exactly those listed here. The families: the word + character
BiLSTM (``words``), a fine-tuned Transformer (the tiny random BERT of the fixtures), our ELMo-style
LM (``bilstm_lm``) and our AWD-LSTM (``awd_lstm``), the last two pretrained tinily here."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, TINY_MODEL, write_random_text
from test_encoder_registry import KINDS, with_fixture_paths

import seqtransfer
from seqtransfer.cli import run
from seqtransfer.errors import SeqTransferError
from seqtransfer.models.encoders import ENCODERS, HEADS
from seqtransfer.rundir import load_run

REFUSED: set[tuple[str, str]] = set()  # (family, kind) pairs the registries refuse, each with one line


@pytest.fixture(scope="module")
def encoder_folders(tmp_path_factory):
    """The arguments that give each family: its encoder folder, fine-tuned."""
    words = "John lives in New York fine . the a cat dog sat on mat great acting awful plot"
    text = write_random_text(tmp_path_factory.mktemp("text") / "text.txt", words, lines=120, longest=9, seed=3)
    folders = tmp_path_factory.mktemp("lms")
    common = ["--epochs", "1", "--batch-size", "16", "--threads", "1", "--quiet", "--device", "cpu", "--size", "tiny"]
    run(["pretrain-lm", "--text", str(text), "--output", str(folders / "bilstm"), "--architecture", "bilstm", *common])
    run(["pretrain-lm", "--text", str(text), "--output", str(folders / "awd"), "--architecture", "awd-lstm", "--bptt", "10", *common])
    finetuned = "model.encoder_mode=finetune"
    return {
        "words": [],
        "transformer": [f"model.encoder={FIXTURES / 'runs' / 'tiny_bert'}", finetuned],
        "bilstm_lm": [f"model.encoder={folders / 'bilstm'}", finetuned],
        "awd_lstm": [f"model.encoder={folders / 'awd'}", finetuned],
    }


def test_the_pairs_cover_both_registries():
    assert set(ENCODERS) == {"words", "transformer", "bilstm_lm", "awd_lstm"}
    assert set(HEADS) == {"tagging", "dependency", "sentence", "regression"}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("family", ["words", "transformer", "bilstm_lm", "awd_lstm"])
def test_an_encoder_and_a_head_train_save_load_and_predict(family, kind, encoder_folders, tmp_path):
    output = tmp_path / "run"
    arguments = ["train", *with_fixture_paths(KINDS[kind]), "--seed", "1", "--epochs", "1", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, *encoder_folders[family]]
    if (family, kind) in REFUSED:
        with pytest.raises(SeqTransferError) as refusal:
            run(arguments)
        assert "\n" not in str(refusal.value.args[0]) and not (output / "metrics.json").exists()
        return
    metrics = run(arguments)
    loaded = load_run(output)
    assert type(loaded.model).encoder_family == family
    if kind == "dependency" and family != "words":  # a fine-tuned encoder's parser: its head at its own rate
        assert loaded.config.train.head_learning_rate == 1e-3
        assert len(metrics["history"][0]["learning_rates"]) == 2
    sentences = [["John", "lives", "in", "New", "York"], ["fine", "."]]
    if kind == "regression":  # the similarity fixture's sentences are pairs
        sentences = [["John", "lives", "[SEP]", "in", "York"], ["fine", "[SEP]", "."]]
    predictions = seqtransfer.load(output).predict(sentences)
    assert len(predictions) == 2
    if kind in ("softmax", "crf", "dependency"):
        assert [len(sentence) for sentence in predictions] == [5, 2]


PAPER_HEADS = {  # model.sentence_reader=to_tune: the To-tune paper's head for the encoder's mode and the data's texts
    ("features", "single"): "BCNReader",
    ("finetune", "single"): "MaxReader",
    ("features", "pairs"): "ESIMReader",
    ("finetune", "pairs"): "BiattentionReader",
}


@pytest.mark.parametrize(  # an AWD-LSTM is read fine-tuned only (ULMFiT): frozen, it is one line (test_awd_lstm)
    "family, mode, texts", [(family, mode, texts) for family in ("transformer", "bilstm_lm", "awd_lstm") for mode, texts in PAPER_HEADS if (family, mode) != ("awd_lstm", "features")]
)
def test_the_papers_heads_read_every_pretrained_encoder_frozen_and_fine_tuned(family, mode, texts, encoder_folders, tmp_path):
    """The BCN, max pooling, ESIM and cross-sentence bi-attention over each pretrained family; the pairs
    are an entailment fixture (classification; the regression pairs are test_recurrent_lm's)."""
    data = KINDS["sentence"] if texts == "single" else [*(option for name in ("train", "dev", "test") for option in (f"--{name}", "tiny_entailment.tsv")), "--columns", "text,text_b,label"]
    encoder = [argument.replace("encoder_mode=finetune", f"encoder_mode={mode}") for argument in encoder_folders[family]]
    output = tmp_path / "run"
    arguments = ["train", *with_fixture_paths(data), "--seed", "1", "--epochs", "1", "--output", str(output), "--quiet", "--device", "cpu", *TINY_MODEL, *encoder]
    run([*arguments, "model.sentence_reader=to_tune", "model.feature_extractor=none"])
    loaded = load_run(output)
    assert type(loaded.model.reader).__name__ == PAPER_HEADS[(mode, texts)]
    assert type(loaded.model).encoder_family == (family if mode == "finetune" else "words")  # frozen: the words family reads the features
    sentences = [["a", "man", "plays", "[SEP]", "a", "man"], ["great", "[SEP]", "awful"]] if texts == "pairs" else [["great", "movie"], ["awful"]]
    predicted = seqtransfer.load(output).predict(sentences)
    labels = {"entailment", "neutral", "contradiction"} if texts == "pairs" else {"pos", "neg"}
    assert len(predicted) == 2 and set(predicted) <= labels


def test_the_head_rate_splits_each_group_into_the_head_and_the_rest():
    from torch import nn

    from seqtransfer.transfer.adaptations import with_head_rate

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lower, self.classifier = nn.Linear(2, 2), nn.Linear(2, 2)

        def layer_prefixes(self, names):
            return ["lower."], ()

    model = Model()
    groups = with_head_rate(model, None, 5e-5, 1e-3)
    assert [(group["name"], group["lr"], len(group["params"])) for group in groups] == [("all", 5e-5, 2), ("head", 1e-3, 2)]
    layered = [{"params": list(model.lower.parameters()), "lr": 1e-5, "name": "lower"}, {"params": list(model.classifier.parameters()), "lr": 5e-5, "name": "head"}]
    assert [(group["name"], group["lr"]) for group in with_head_rate(model, layered, 5e-5, 1e-3)] == [("lower", 1e-5), ("head", 1e-3)]
